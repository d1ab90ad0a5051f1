#include "criterion/label_lm.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

corpus three_segments() {
  return unwrap(corpus::from_string("a\t1 2\nb\t2 2 1\nc\t1\n"));
}

/// The cost of reading `labels` and ending, walking the acceptor's arcs
/// (it is deterministic); none if it cannot.
std::optional<double> walk(const label_acceptor& acceptor, const std::vector<uint32_t>& labels) {
  uint32_t state = label_acceptor::start_state;
  double cost = 0;
  for (auto label : labels) {
    const label_arc* taken = nullptr;
    for (const auto& arc : acceptor.arcs())
      if (arc.from == state && arc.label == label) {
        REQUIRE(taken == nullptr);
        taken = &arc;
      }
    if (taken == nullptr)
      return std::nullopt;
    cost += taken->weight;
    state = taken->to;
  }
  const auto end = acceptor.final_weight(state);
  if (!end)
    return std::nullopt;
  return cost + *end;
}

} // namespace

TEST_CASE("a bigram's probabilities are the smoothed relative frequencies") {
  // Events (history, token): <s> 1, 1 2, 2 </s> | <s> 2, 2 2, 2 1, 1 </s> |
  // <s> 1, 1 </s>. Each history occurs 3 times; 3 tokens, DELTA 0.5.
  const auto lm = unwrap(label_lm::estimate(three_segments(), {2, 0.5}));
  CHECK(lm.vocabulary() == std::vector<uint32_t>{1, 2});
  const auto p = [](double count) { return std::log((count + 0.5) / (3 + 1.5)); };
  CHECK(lm.cost(std::vector<uint32_t>{1, 2}) == Approx(-(p(2) + p(1) + p(1))).epsilon(1e-15));
  CHECK(lm.cost(std::vector<uint32_t>{}) == Approx(-p(0)).epsilon(1e-15));
  CHECK(lm.cost(std::vector<uint32_t>{2, 2, 1}) ==
        Approx(-(p(1) + p(1) + p(1) + p(2))).epsilon(1e-15));
  CHECK(std::isinf(lm.cost(std::vector<uint32_t>{3})));
}

TEST_CASE("a unigram and a trigram without smoothing") {
  const auto unigram = unwrap(label_lm::estimate(three_segments(), {1, 0.0}));
  // Tokens: 1 three times, 2 three times, </s> three times.
  CHECK(unigram.cost(std::vector<uint32_t>{2, 1}) == Approx(-3 * std::log(1.0 / 3)).epsilon(1e-15));
  const auto trigram = unwrap(label_lm::estimate(three_segments(), {3, 0.0}));
  // <s> <s> 2, <s> 2 2, 2 2 1, 2 1 </s>: segment b is the only one starting
  // with 2, so its continuation is certain; "2 1" was never seen after <s>.
  CHECK(trigram.cost(std::vector<uint32_t>{2, 2, 1}) == Approx(-std::log(1.0 / 3)).epsilon(1e-15));
  CHECK(std::isinf(trigram.cost(std::vector<uint32_t>{2, 1})));
}

TEST_CASE("the acceptor's paths cost the n-gram's costs, scaled") {
  for (uint32_t order : {1u, 2u, 3u})
    for (double smoothing : {0.0, 1.0}) {
      INFO("order " << order << ", smoothing " << smoothing);
      const auto lm = unwrap(label_lm::estimate(three_segments(), {order, smoothing}));
      const auto acceptor = lm.acceptor(0.75);
      for (const auto& labels : test::all_sequences({1, 2}, 3)) {
        const double cost = lm.cost(labels);
        const auto walked = walk(acceptor, labels);
        CHECK(walked.has_value() == std::isfinite(cost));
        if (walked)
          CHECK(*walked == Approx(0.75 * cost).epsilon(1e-14));
      }
      // Every state but the start is entered by arcs of one label.
      for (const auto& arc : acceptor.arcs())
        CHECK(acceptor.last_label(arc.to) == arc.label);
    }
}

TEST_CASE("the acceptor has one state per reachable history") {
  // Bigram with smoothing: <s>, 1, 2. Trigram without: <s><s>, <s>1, <s>2,
  // 12, 22, 21 (the histories the corpus reaches).
  CHECK(unwrap(label_lm::estimate(three_segments(), {2, 1.0})).acceptor(1).num_states() == 3);
  CHECK(unwrap(label_lm::estimate(three_segments(), {3, 0.0})).acceptor(1).num_states() == 6);
  CHECK(unwrap(label_lm::estimate(three_segments(), {1, 0.0})).acceptor(1).num_states() == 3);
}

TEST_CASE("an order or smoothing out of range is an error naming it") {
  auto zero = label_lm::estimate(three_segments(), {0, 1.0});
  REQUIRE_FALSE(zero);
  CHECK(zero.error() == errc::invalid_options);
  CHECK(error_message(zero.error()) == "label-lm: lm-order 0 is not 1, 2 or 3");
  auto negative = label_lm::estimate(three_segments(), {2, -1.0});
  REQUIRE_FALSE(negative);
  CHECK(error_message(negative.error()).find("lm-smoothing -1") != std::string::npos);
  CHECK_FALSE(label_lm::estimate(three_segments(), {2, std::numeric_limits<double>::infinity()}));
}
