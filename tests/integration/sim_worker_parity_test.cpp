// The in-process simulated worker against a real sprint-sim child started
// from the same options: the same segments (several lengths, strided slices
// of one batch, a segment whose labels cannot fit, CTC and HMM, a Python
// float or a numpy.float32 loss, the sequence-discriminative criteria over a
// denominator file or a label n-gram) give bit-identical losses and error
// signals, the same FSAs (by segment name and by orthography, the label
// sequence as the corpus file writes it) and the same errors.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "criterion/corpus.hpp"
#include "sprintrt/sim_worker.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 7;
constexpr size_t max_frames = 20;

/// Segments of several label counts; "p/skip" needs more frames than it
/// gets (9 for CTC with its repeated labels, 5 for the HMM).
const std::vector<criterion::corpus_entry> entries{
    {"p/short", {1}},
    {"p/mid", {2, 3, 1}},
    {"p/long", {1, 2, 3, 4, 5, 1, 2, 4}},
    {"p/skip", {3, 3, 3, 3, 3}},
    {"p/empty", {}},
};

/// Frames per column of the batch, in the order of `entries`.
const std::vector<size_t> frames{13, 7, 20, 4, 2};

/// One [T, B, D] batch and one output per worker kind.
struct parity_batch {
  float_storage input = make_storage(max_frames * entries.size() * dim);
  float_storage child_out;
  float_storage sim_out;

  parity_batch() {
    const size_t width = entries.size();
    // Column b holds frames[b] frames of random log-posteriors, then padding.
    for (size_t b = 0; b < width; ++b) {
      auto lp = test::random_log_posteriors(frames[b], dim, 100 + b);
      for (size_t t = 0; t < frames[b]; ++t)
        std::memcpy(input->data() + (t * width + b) * dim, lp.data() + t * dim,
                    dim * sizeof(float));
    }
    child_out = make_storage(input->size(), 5.0f);
    sim_out = make_storage(input->size(), 5.0f);
  }

  segment_job job(size_t b, const float_storage& out) const {
    const size_t width = entries.size();
    return {entries[b].name,
            {input, b * dim, frames[b], dim, width * dim},
            {out, b * dim, frames[b], dim, width * dim}};
  }
};

/// The orthography sprint-sim reads as `labels` (" " for none: an empty
/// query is refused before it is sent).
std::string orthography_of(const std::vector<uint32_t>& labels) {
  return labels.empty() ? " " : test::orthography_of(labels);
}

using test::check_same_fsa;

bool same_bits(double x, double y) {
  return std::memcmp(&x, &y, sizeof(double)) == 0;
}

} // namespace

TEST_CASE("a sim worker gives bit-identical results to a sprint-sim child from the same options") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    const auto corpus = test::corpus_path(dir);
    REQUIRE_FALSE(criterion::write_corpus_file(corpus, entries));
    const auto hypotheses = dir.path() + "/denominator.txt";
    std::ofstream{hypotheses} << "p/mid\t3 2 1\t0.5\np/mid\t2 3\np/long\t1 2 3 4\t-0.25\n"
                                 "p/short\t2\np/empty\t4\t1.5\n";
    test::test_runtime rt;
    caf::scoped_actor self{rt.system()};
    const std::vector<std::vector<std::string>> variants{
        {},
        {"loss-type=numpy-float32"},
        {"topology=hmm", "hmm-silence-index=0"},
        {"topology=hmm", "hmm-silence-index=none", "hmm-loop-cost=0.5", "loss-type=numpy-float32"},
        {"blank-index=6"},
        {"criterion=mmi", "denominator=" + hypotheses, "lm-scale=0.5"},
        {"criterion=bmmi", "denominator=label-lm", "boost=0.5", "am-scale=0.8"},
        {"criterion=smbr", "denominator=" + hypotheses, "topology=hmm", "hmm-silence-index=0"},
        {"criterion=smbr", "denominator=label-lm", "lm-order=3", "lm-smoothing=0.1"},
    };
    for (const auto& params : variants) {
      std::string name;
      for (const auto& p : params)
        name += p + " ";
      INFO("parameters: " << name);
      auto opts = test::sim_options(corpus, params);
      // The same label in both: the errors must read the same.
      auto child = rt.spawn_worker(opts, "parity worker");
      auto source = sim_worker_source(opts);
      REQUIRE(source);
      auto sim = source->make(rt.system(), 0, "parity worker");
      parity_batch batch;
      for (size_t b = 0; b < entries.size(); ++b) {
        INFO(entries[b].name << ", " << frames[b] << " frames");
        auto from_child = test::compute(self, child, batch.job(b, batch.child_out));
        auto from_sim = test::compute(self, sim, batch.job(b, batch.sim_out));
        // A segment the topology cannot build (an empty one without an HMM
        // silence) fails alike; all others compute.
        REQUIRE(static_cast<bool>(from_child) == static_cast<bool>(from_sim));
        if (!from_child) {
          CHECK(entries[b].labels.empty());
          CHECK(render(from_sim.error()) == render(from_child.error()));
          continue;
        }
        CHECK(same_bits(*from_child, *from_sim));
        CHECK(std::isinf(*from_sim) == (entries[b].name == "p/skip"));
      }
      // Every error signal bit, the padding rows untouched in both.
      CHECK(std::memcmp(batch.child_out->data(), batch.sim_out->data(),
                        batch.sim_out->size() * sizeof(float)) == 0);
      for (const auto& entry : entries) {
        INFO(entry.name);
        auto fsa_child = test::export_fsa(self, child, entry.name);
        auto fsa_sim = test::export_fsa(self, sim, entry.name);
        REQUIRE(static_cast<bool>(fsa_child) == static_cast<bool>(fsa_sim));
        if (!fsa_child) {
          CHECK(render(fsa_sim.error()) == render(fsa_child.error()));
          continue;
        }
        check_same_fsa(*fsa_child, *fsa_sim);
        // By orthography: the same automaton, from either worker.
        const auto orthography = orthography_of(entry.labels);
        auto by_orthography_child =
            test::export_fsa(self, child, orthography, fsa_source::orthography);
        auto by_orthography_sim = test::export_fsa(self, sim, orthography, fsa_source::orthography);
        REQUIRE(by_orthography_child);
        REQUIRE(by_orthography_sim);
        check_same_fsa(*by_orthography_child, *fsa_child);
        check_same_fsa(*by_orthography_sim, *fsa_child);
      }
      // A malformed orthography fails that export alike, naming it; both
      // serve on.
      auto bad_child = test::export_fsa(self, child, "2 three", fsa_source::orthography);
      auto bad_sim = test::export_fsa(self, sim, "2 three", fsa_source::orthography);
      REQUIRE_FALSE(bad_child);
      REQUIRE_FALSE(bad_sim);
      CHECK(bad_child.error() == errc::child_exception);
      CHECK(error_message(bad_child.error()) ==
            "parity worker: export_allophone_state_fsa_by_orthography of orthography '2 three': "
            "label number 2 of orthography '2 three' is 'three', not a non-negative integer");
      CHECK(render(bad_sim.error()) == render(bad_child.error()));
      auto after_child = test::export_fsa(self, child, "p/mid");
      auto after_sim = test::export_fsa(self, sim, "2 3 1", fsa_source::orthography);
      REQUIRE(after_child);
      REQUIRE(after_sim);
      check_same_fsa(*after_sim, *after_child);
      // What sprint-sim answers with an exception fails alike.
      auto lp = test::random_log_posteriors(3, dim, 9);
      auto unknown_child = test::compute(self, child, test::make_job("p/nope", lp, dim));
      auto unknown_sim = test::compute(self, sim, test::make_job("p/nope", lp, dim));
      REQUIRE_FALSE(unknown_child);
      REQUIRE_FALSE(unknown_sim);
      CHECK(unknown_child.error() == errc::unknown_segment);
      CHECK(render(unknown_sim.error()) == render(unknown_child.error()));
      lp[4] = std::numeric_limits<float>::quiet_NaN();
      auto nan_child = test::compute(self, child, test::make_job("p/mid", lp, dim));
      auto nan_sim = test::compute(self, sim, test::make_job("p/mid", lp, dim));
      REQUIRE_FALSE(nan_child);
      REQUIRE_FALSE(nan_sim);
      CHECK(render(nan_sim.error()) == render(nan_child.error()));
      caf::anon_send_exit(sim, caf::exit_reason::user_shutdown);
    }
    // The runtime shuts down after `self` is gone (it awaits every actor).
  }
  test::check_nothing_left(fds);
}
