// topology::expand: a label acceptor composed with the CTC and HMM
// topologies gives each accepted sequence exactly the paths and scores that
// topology::build gives it.

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "criterion/hmm_topology.hpp"
#include "criterion/label_acceptor.hpp"
#include "criterion/sequence_engine.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

/// The HMMs of every silence placement, with distinct costs.
std::vector<hmm_topology> hmm_variants() {
  std::vector<hmm_topology> result;
  for (int mask = 0; mask < 8; ++mask) {
    auto options = test::distinct_hmm_costs();
    options.silence_at_start = mask & 1;
    options.silence_between_labels = mask & 2;
    options.silence_at_end = mask & 4;
    result.push_back(unwrap(hmm_topology::make(options)));
  }
  return result;
}

/// log Z of one sequence with cost `cost`, through `build` and through
/// `expand` of its one-hypothesis acceptor, must agree for every T.
void check_expansion(const topology& top, const std::vector<uint32_t>& labels, std::mt19937& rng) {
  std::string text;
  for (auto label : labels)
    text += std::to_string(label) + " ";
  INFO(top.name() << " of '" << text << "'");
  const double cost = 0.625;
  const auto built = unwrap(top.build("seg", labels));
  const auto expanded =
      unwrap(top.expand("seg", hypotheses_acceptor(std::vector<hypothesis>{{labels, cost}}, 2)));
  CHECK(check(expanded).empty());
  sequence_engine engine;
  for (Eigen::Index frames = 1; frames <= 5; ++frames) {
    const row_matrix_d scores = test::random_log_posteriors(frames, 3, rng).cast<double>();
    const double want = engine.run(to_wfsa(built, 2 * cost), scores);
    const double got = engine.run(expanded, scores);
    INFO("T = " << frames);
    if (std::isinf(want))
      CHECK(got == want);
    else
      CHECK(got == Approx(want).epsilon(1e-12));
  }
}

} // namespace

TEST_CASE("CTC: a sequence's expansion has exactly its FSA's paths") {
  std::mt19937 rng{21};
  const ctc_topology ctc{0};
  for (const auto& labels : test::all_sequences({1, 2}, 3))
    check_expansion(ctc, labels, rng);
}

TEST_CASE("HMM: a sequence's expansion has exactly its FSA's paths, every silence placement") {
  std::mt19937 rng{22};
  for (const auto& hmm : hmm_variants())
    for (const auto& labels : test::all_sequences({1, 2}, 3))
      check_expansion(hmm, labels, rng);
}

TEST_CASE("the expansion of several hypotheses sums their paths") {
  std::mt19937 rng{23};
  const ctc_topology ctc{0};
  const std::vector<hypothesis> hypotheses = {{{1, 2}, 0.5}, {{1}, 0.25}, {{}, 1.0}};
  const auto expanded = unwrap(ctc.expand("den", hypotheses_acceptor(hypotheses, 1.5)));
  sequence_engine engine;
  const row_matrix_d scores = test::random_log_posteriors(4, 3, rng).cast<double>();
  double sum = 0;
  for (const auto& h : hypotheses)
    sum += std::exp(engine.run(to_wfsa(unwrap(ctc.build("h", h.labels)), 1.5 * h.cost), scores));
  CHECK(engine.run(expanded, scores) == Approx(std::log(sum)).epsilon(1e-12));
}

TEST_CASE("an acceptor label the topology refuses is an error naming its owner") {
  const ctc_topology ctc{1};
  auto refused =
      ctc.expand("label-lm", hypotheses_acceptor(std::vector<hypothesis>{{{2, 1}, 0}}, 1));
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == errc::invalid_input);
  CHECK(error_message(refused.error()) == "label-lm: label 1 is the CTC blank index");
  CHECK(error_message(ctc.check_labels("x", std::vector<uint32_t>{2, 1})) ==
        "x: label number 2 is 1, the CTC blank index");
  hmm_options options;
  const auto hmm = unwrap(hmm_topology::make(options));
  CHECK(hmm.check_labels("x", std::vector<uint32_t>{}) == errc::invalid_input);
  // Without silence the empty sequence has no path: only "1" remains.
  std::mt19937 rng{24};
  const auto expanded =
      unwrap(hmm.expand("den", hypotheses_acceptor(std::vector<hypothesis>{{{}, 0}, {{1}, 0}}, 1)));
  const row_matrix_d scores = test::random_log_posteriors(3, 2, rng).cast<double>();
  sequence_engine engine;
  const double only_one =
      engine.run(to_wfsa(unwrap(hmm.build("1", std::vector<uint32_t>{1}))), scores);
  CHECK(engine.run(expanded, scores) == Approx(only_one).epsilon(1e-12));
}
