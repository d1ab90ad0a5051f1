#include "actors/pool/automata_merge.hpp"

#include <catch2/catch.hpp>

using namespace sprintrt;
using namespace sprintrt::detail;

TEST_CASE("automata merge with state offsets, a segment row and start/end states") {
  // Segment 0: 3 states, edges 0->0 (e0, w.7), 0->1 (e1, w.7), 1->1 (e1, w.5), 1->2 (e2, w.9)
  // (the golden c2p_fsa_reply). Segment 1: 2 states, edges 0->1 (e3, w1), 1->1 (e3, w2).
  segment_fsa a{3, {0, 0, 1, 1, 0, 1, 1, 2, 0, 1, 1, 2}, {0.7f, 0.7f, 0.5f, 0.9f}};
  segment_fsa b{2, {0, 1, 1, 1, 3, 3}, {1.0f, 2.0f}};
  auto merged = merge_automata({a, b});
  REQUIRE(merged);
  REQUIRE(merged->num_edges() == 6);
  std::vector<uint32_t> expected_edges{
      0, 0, 1, 1, 3, 4, // from (segment 1 shifted by 3)
      0, 1, 1, 2, 4, 4, // to
      0, 1, 1, 2, 3, 3, // emission (never shifted)
      0, 0, 0, 0, 1, 1, // segment index
  };
  CHECK(merged->edges == expected_edges);
  CHECK(merged->weights == std::vector<float>{0.7f, 0.7f, 0.5f, 0.9f, 1.0f, 2.0f});
  CHECK(merged->start_end_states == std::vector<uint32_t>{0, 3, 2, 4});
}

TEST_CASE("a segment without edges still gets its start and end states") {
  segment_fsa empty{1, {}, {}};
  segment_fsa one{2, {0, 1, 5}, {0.0f}};
  auto merged = merge_automata({empty, one});
  REQUIRE(merged);
  CHECK(merged->edges == std::vector<uint32_t>{1, 2, 5, 1});
  CHECK(merged->start_end_states == std::vector<uint32_t>{0, 1, 0, 2});
}

TEST_CASE("inconsistent automata are refused") {
  CHECK(merge_automata({segment_fsa{0, {}, {}}}).error() == errc::invalid_message);
  CHECK(merge_automata({segment_fsa{2, {0, 1}, {0.0f}}}).error() == errc::invalid_message);
  auto bad_state = merge_automata({segment_fsa{2, {0, 2, 0}, {0.0f}}});
  REQUIRE_FALSE(bad_state);
  CHECK(render(bad_state.error()).find("edge 0 names state 2 of 2") != std::string::npos);
}

TEST_CASE("state counts beyond uint32 are refused, not wrapped") {
  uint64_t huge = uint64_t{1} << 63;
  auto r = merge_automata({segment_fsa{huge, {}, {}}, segment_fsa{huge, {}, {}}});
  REQUIRE_FALSE(r);
  CHECK(r.error() == errc::invalid_message);
  CHECK(render(r.error()).find("more than uint32 state ids allow") != std::string::npos);
  auto sum = merge_automata(
      {segment_fsa{uint64_t{1} << 31, {}, {}}, segment_fsa{uint64_t{1} << 31, {}, {}}});
  CHECK(sum.error() == errc::invalid_message);
}
