#include "criterion/fsa_bands.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/ctc_topology.hpp"
#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using test::unwrap;

namespace {

/// The slots of a band that hold edges, as (from, to) pairs.
std::vector<std::pair<uint32_t, uint32_t>> band_edges(const fsa_bands& layout,
                                                      const fsa_bands::band& band) {
  std::vector<std::pair<uint32_t, uint32_t>> result;
  for (uint32_t i = 0; i < band.length; ++i)
    if (layout.score()[band.start + i] != -std::numeric_limits<double>::infinity()) {
      const uint32_t to = band.first + i;
      result.emplace_back(static_cast<uint32_t>(to - band.offset), to);
    }
  return result;
}

using pairs = std::vector<std::pair<uint32_t, uint32_t>>;

} // namespace

TEST_CASE("a CTC FSA lays out as loop and step bands, a sparse skip and a mixed final state") {
  // Labels 1 2 2, blank 0: B0=0 L1=1 B1=2 L2=3 B2=4 L3=5 B3=6 F=7. Only
  // L1 -> L2 skips (the equal labels need their blank); F is entered by
  // copies of edges that emit 2 and 0.
  const auto automaton = unwrap(ctc_topology{0}.build("seg", std::vector<uint32_t>{1, 2, 2}));
  fsa_bands layout;
  layout.assign(automaton);
  REQUIRE(layout.num_states() == 8);
  CHECK(layout.final_state() == 7);
  REQUIRE(layout.bands().size() == 2);
  const auto& loops = layout.bands()[0];
  const auto& steps = layout.bands()[1];
  CHECK(loops.offset == 0);
  CHECK(loops.first == 0);
  CHECK(loops.length == 8);
  CHECK(band_edges(layout, loops) == pairs{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}});
  CHECK(steps.offset == 1);
  CHECK(steps.first == 1);
  CHECK(steps.length == 7);
  CHECK(steps.start == 8);
  CHECK(band_edges(layout, steps) == pairs{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}});
  REQUIRE(layout.pure_edges().size() == 1);
  CHECK(layout.pure_edges()[0].from == 1);
  CHECK(layout.pure_edges()[0].to == 3);
  CHECK(layout.mixed_edges().size() == 4);
  for (const auto& e : layout.mixed_edges())
    CHECK(e.to == 7);
  CHECK(layout.score().size() == 15 + 1 + 4);
  CHECK(layout.max_in_degree() == 4);
  CHECK(layout.max_out_degree() == 4); // L3: loop, -> B3, two copies -> F
  layout.group_emissions(3);
  CHECK(layout.state_class() == std::vector<uint32_t>{0, 1, 0, 2, 0, 2, 0, 3});
  CHECK(layout.class_offsets() == std::vector<uint32_t>{0, 4, 5, 7});
  CHECK(layout.class_states() == std::vector<uint32_t>{0, 2, 4, 6, 1, 3, 5});
}

TEST_CASE("the second of parallel edges and edges into mixed states go to the lists") {
  // 0 -> 1 twice (both emit 1), 1 -> 1; state 2 is entered emitting 0 and 1.
  const std::vector<fsa_edge> edges = {
      {0, 1, 1, 0.5f}, {0, 1, 1, 1.5f}, {1, 1, 1, 0.0f}, {0, 2, 0, 0.0f}, {1, 2, 1, 2.0f}};
  fsa_bands layout;
  layout.assign(unwrap(fsa::make(3, edges)));
  // Diagonal 1 is dense (two edges on one slot), diagonal 0 (one loop) not.
  REQUIRE(layout.bands().size() == 1);
  CHECK(layout.bands()[0].offset == 1);
  REQUIRE(layout.pure_edges().size() == 2);
  CHECK(layout.pure_edges()[1].from == 1);
  CHECK(layout.pure_edges()[1].to == 1);
  const auto& second = layout.pure_edges()[0];
  CHECK(second.from == 0);
  CHECK(second.to == 1);
  CHECK(layout.score()[second.slot] == -1.5);
  REQUIRE(layout.mixed_edges().size() == 2);
  CHECK(layout.mixed_edges()[0].emission == 0);
  CHECK(layout.mixed_edges()[1].emission == 1);
  CHECK(layout.score()[layout.mixed_edges()[1].slot] == -2.0);
  layout.group_emissions(2);
  // State 0 has no incoming edges: like a mixed state, it has no class.
  CHECK(layout.state_class() == std::vector<uint32_t>{2, 1, 2});
  CHECK(layout.class_offsets() == std::vector<uint32_t>{0, 0, 1});
}

TEST_CASE("reassigning the bands replaces everything of the previous FSA") {
  std::mt19937 rng{5};
  fsa_bands layout;
  layout.assign(test::random_fsa(7, 30, 4, rng));
  const std::vector<fsa_edge> edges = {{0, 0, 2, 0.25f}, {0, 1, 1, 0.0f}};
  layout.assign(unwrap(fsa::make(2, edges)));
  CHECK(layout.num_states() == 2);
  CHECK(layout.bands().empty());
  CHECK(layout.pure_edges().size() == 2);
  CHECK(layout.mixed_edges().empty());
  CHECK(layout.score() == std::vector<double>{-0.25, 0.0});
  layout.group_emissions(3);
  CHECK(layout.state_class() == std::vector<uint32_t>{2, 1});
}
