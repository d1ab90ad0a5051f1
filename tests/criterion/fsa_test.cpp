#include "criterion/fsa.hpp"

#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using sprintrt::errc;
using sprintrt::error_message;
using test::unwrap;

namespace {

const std::vector<fsa_edge> three_edges = {{0, 1, 5, 0.5f}, {1, 1, 6, 0.25f}, {1, 2, 7, 1.0f}};

} // namespace

TEST_CASE("an FSA stores its edges in the protocol's flat layout") {
  const auto automaton = unwrap(fsa::make(3, three_edges));
  CHECK(automaton.num_states() == 3);
  CHECK(automaton.num_edges() == 3);
  CHECK(automaton.final_state() == 2);
  const auto flat = automaton.flat_edges();
  CHECK(std::vector<uint32_t>(flat.begin(), flat.end()) ==
        std::vector<uint32_t>{0, 1, 1, 1, 1, 2, 5, 6, 7});
  const auto weights = automaton.weights();
  CHECK(std::vector<float>(weights.begin(), weights.end()) ==
        std::vector<float>{0.5f, 0.25f, 1.0f});
  CHECK(std::vector<uint32_t>(automaton.sources().begin(), automaton.sources().end()) ==
        std::vector<uint32_t>{0, 1, 1});
  CHECK(std::vector<uint32_t>(automaton.targets().begin(), automaton.targets().end()) ==
        std::vector<uint32_t>{1, 1, 2});
  CHECK(std::vector<uint32_t>(automaton.emissions().begin(), automaton.emissions().end()) ==
        std::vector<uint32_t>{5, 6, 7});
  CHECK(automaton.edge(1) == fsa_edge{1, 1, 6, 0.25f});
  CHECK(automaton.edges() == three_edges);
}

TEST_CASE("an FSA read from the flat layout equals the one it was exported from") {
  const auto original = unwrap(fsa::make(3, three_edges));
  const auto copy = unwrap(fsa::from_flat(3, original.flat_edges(), original.weights()));
  CHECK(copy.num_states() == 3);
  CHECK(copy.edges() == three_edges);
}

TEST_CASE("FSA validation rejects bad states, weights and layouts") {
  SECTION("no states") {
    auto result = fsa::make(0, {});
    REQUIRE(!result);
    CHECK(result.error() == errc::invalid_input);
  }
  SECTION("a target out of range names the edge and the states") {
    const std::vector<fsa_edge> edges = {{0, 1, 0, 0.0f}, {1, 3, 0, 0.0f}};
    auto result = fsa::make(3, edges);
    REQUIRE(!result);
    CHECK(result.error() == errc::invalid_input);
    CHECK(error_message(result.error()) ==
          "FSA edge 1 goes from state 1 to state 3, but the FSA has only 3 states");
  }
  SECTION("a source out of range") {
    const std::vector<fsa_edge> edges = {{7, 0, 0, 0.0f}};
    CHECK(!fsa::make(2, edges));
  }
  SECTION("NaN and -inf weights, but +inf is a forbidden edge") {
    std::vector<fsa_edge> edges = {{0, 1, 0, std::numeric_limits<float>::quiet_NaN()}};
    CHECK(!fsa::make(2, edges));
    edges[0].weight = -std::numeric_limits<float>::infinity();
    CHECK(!fsa::make(2, edges));
    edges[0].weight = std::numeric_limits<float>::infinity();
    CHECK(fsa::make(2, edges));
  }
  SECTION("a flat layout needs three values per weight") {
    const std::vector<uint32_t> flat = {0, 1, 0, 0};
    const std::vector<float> weights = {0.0f};
    auto result = fsa::from_flat(2, flat, weights);
    REQUIRE(!result);
    CHECK(error_message(result.error()) ==
          "FSA has 4 edge values for 1 weights (expected 3 per edge)");
  }
  SECTION("the flat layout is validated like edges") {
    const std::vector<uint32_t> flat = {0, 2, 0};
    const std::vector<float> weights = {0.0f};
    CHECK(!fsa::from_flat(2, flat, weights));
  }
}

TEST_CASE("the default FSA has one state and no edges") {
  const fsa automaton;
  CHECK(automaton.num_states() == 1);
  CHECK(automaton.num_edges() == 0);
  CHECK(automaton.flat_edges().empty());
}

TEST_CASE("FSAs render one edge per line") {
  const auto automaton = unwrap(fsa::make(3, three_edges));
  CHECK(to_string(automaton) == "fsa: 3 states, 3 edges\n"
                                "  0 -> 1 emits 5 weight 0.5\n"
                                "  1 -> 1 emits 6 weight 0.25\n"
                                "  1 -> 2 emits 7 weight 1");
}
