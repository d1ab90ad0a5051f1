#include "criterion/fsa_csr.hpp"

#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/criterion_test_support.hpp"

using namespace sprintrt::criterion;
using test::unwrap;

TEST_CASE("the CSR form groups edges by target and by source in edge order") {
  // 0 -> 1 (e0), 1 -> 1 (e1), 0 -> 2 (e2), 1 -> 2 (e3), 2 -> 2 (e4)
  const std::vector<fsa_edge> edges = {
      {0, 1, 10, 1.0f}, {1, 1, 11, 2.0f}, {0, 2, 12, 3.0f}, {1, 2, 13, 4.0f}, {2, 2, 14, 5.0f}};
  fsa_csr csr;
  csr.assign(unwrap(fsa::make(3, edges)));
  CHECK(csr.num_states() == 3);
  CHECK(csr.num_edges() == 5);
  CHECK(csr.final_state() == 2);
  const auto& in = csr.incoming();
  CHECK(in.offsets == std::vector<uint32_t>{0, 0, 2, 5});
  CHECK(in.edge == std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(in.other == std::vector<uint32_t>{0, 1, 0, 1, 2});
  CHECK(in.emission == std::vector<uint32_t>{10, 11, 12, 13, 14});
  CHECK(in.score == std::vector<double>{-1, -2, -3, -4, -5});
  const auto& out = csr.outgoing();
  CHECK(out.offsets == std::vector<uint32_t>{0, 2, 4, 5});
  CHECK(out.edge == std::vector<uint32_t>{0, 2, 1, 3, 4});
  CHECK(out.other == std::vector<uint32_t>{1, 2, 1, 2, 2});
  CHECK(out.emission == std::vector<uint32_t>{10, 12, 11, 13, 14});
  CHECK(out.score == std::vector<double>{-1, -3, -2, -4, -5});
}

TEST_CASE("reassigning the CSR form replaces everything of the previous FSA") {
  std::mt19937 rng{3};
  fsa_csr csr;
  csr.assign(test::random_fsa(6, 20, 4, rng));
  const std::vector<fsa_edge> edges = {{1, 0, 3, 0.5f}};
  csr.assign(unwrap(fsa::make(2, edges)));
  CHECK(csr.num_states() == 2);
  CHECK(csr.num_edges() == 1);
  CHECK(csr.incoming().offsets == std::vector<uint32_t>{0, 1, 1});
  CHECK(csr.incoming().other == std::vector<uint32_t>{1});
  CHECK(csr.outgoing().offsets == std::vector<uint32_t>{0, 0, 1});
  CHECK(csr.outgoing().other == std::vector<uint32_t>{0});
  CHECK(csr.outgoing().score == std::vector<double>{-0.5});
}

TEST_CASE("the CSR form groups outgoing edges by emission") {
  // Outgoing order emits 10, 12, 11, 13, 14, 12; classes below 10 have no edges.
  const std::vector<fsa_edge> edges = {{0, 1, 10, 0.0f}, {1, 1, 11, 0.0f}, {0, 2, 12, 0.0f},
                                       {1, 2, 13, 0.0f}, {2, 2, 14, 0.0f}, {2, 0, 12, 0.0f}};
  fsa_csr csr;
  csr.assign(unwrap(fsa::make(3, edges)));
  REQUIRE(csr.outgoing().emission == std::vector<uint32_t>{10, 12, 11, 13, 14, 12});
  csr.group_emissions(16);
  std::vector<uint32_t> expected_offsets(17, 0);
  const std::vector<uint32_t> tail = {1, 2, 4, 5, 6, 6};
  std::copy(tail.begin(), tail.end(), expected_offsets.begin() + 11);
  CHECK(csr.emission_offsets() == expected_offsets);
  CHECK(csr.emission_edges() == std::vector<uint32_t>{0, 2, 1, 5, 3, 4});
}
