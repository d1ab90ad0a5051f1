// One pool implementation for every worker source: a pool of in-process
// simulated workers computes a batch (and its automata) bit-identically to a
// pool of sprint-sim children started from the same options.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 6;

/// A [T, B, D] batch of corpus segments with skewed lengths; one segment
/// is too short for any labels but a single one, so it may be skipped.
batch make_batch(const std::vector<test::test_segment>& segments, uint64_t seed) {
  const std::vector<int64_t> lengths{17, 3, 9, 1, 12, 6, 14, 2};
  const size_t frames = 17;
  batch b;
  b.log_posteriors = tensor::zeros({frames, lengths.size(), dim});
  for (size_t i = 0; i < lengths.size(); ++i) {
    auto lp = test::random_log_posteriors(static_cast<size_t>(lengths[i]), dim, seed + i);
    auto slice = segment_slice(b.log_posteriors, i, static_cast<size_t>(lengths[i]));
    for (size_t t = 0; t < slice.rows; ++t)
      std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim, slice.row(t));
    b.tags.push_back(segments[i].name);
  }
  b.seq_lengths = lengths;
  return b;
}

} // namespace

TEST_CASE("a pool of sim workers computes a batch bit-identically to a pool of children") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 8, dim, 3);
    for (const auto& params :
         std::vector<std::vector<std::string>>{{}, {"topology=hmm", "loss-type=numpy-float32"}}) {
      INFO(params.size() << " extra parameters");
      auto opts = test::sim_options(test::corpus_path(dir), params);
      opts.num_instances = 3;
      sprint_runtime rt;
      auto source = sim_worker_source(opts);
      REQUIRE(source);
      pool_client children{rt, opts};
      pool_client sims{rt, rt.pool(std::move(*source), "sim pool")};
      auto b = make_batch(segments, 40);
      auto from_children = children.compute(b);
      auto from_sims = sims.compute(b);
      REQUIRE(from_children);
      REQUIRE(from_sims);
      REQUIRE(from_children->loss.size() == b.tags.size());
      REQUIRE(from_sims->loss.size() == b.tags.size());
      CHECK(std::memcmp(from_children->loss.data(), from_sims->loss.data(),
                        b.tags.size() * sizeof(float)) == 0);
      REQUIRE(from_sims->error_signal.shape() == from_children->error_signal.shape());
      CHECK(std::memcmp(from_children->error_signal.data(), from_sims->error_signal.data(),
                        from_sims->error_signal.size() * sizeof(float)) == 0);
      auto fsa_children = children.automata(b.tags);
      auto fsa_sims = sims.automata(b.tags);
      REQUIRE(fsa_children);
      REQUIRE(fsa_sims);
      CHECK(fsa_children->edges == fsa_sims->edges);
      CHECK(fsa_children->weights == fsa_sims->weights);
      CHECK(fsa_children->start_end_states == fsa_sims->start_end_states);
      rt.shutdown();
    }
  }
  test::check_nothing_left(fds);
}
