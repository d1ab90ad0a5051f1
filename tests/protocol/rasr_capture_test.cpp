// The codec against traffic captured from a real RASR: nn-trainer (RASR
// commit b6ff1a89) exporting the automaton of one segment of the tiny
// set-up (scripts/rasr/tiny_setup.py, segment "tiny/r0/s0", orthography
// "bad"), once with RETURNN's child module and once with sprintrt's, each
// captured with `sprintrt record` (tests/data/rasr-captures/README.md).
// The expected automaton is librasr's AllophoneStateFsaBuilder's for the
// same segment: an independent source.

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;

namespace {

/// The messages of one captured direction, decoded.
std::vector<value> capture(const std::string& name) {
  auto wire = sprintrt::test::read_file(std::string{SPRINTRT_TEST_DATA} + "/rasr-captures/" + name);
  frame_decoder decoder{framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed(sprintrt::test::bytes_of(wire)));
  REQUIRE(decoder.partial_bytes() == 0);
  std::vector<value> messages;
  while (auto msg = decoder.next()) {
    auto x = read_pickle(std::make_shared<const byte_buffer>(std::move(*msg)));
    REQUIRE(x);
    messages.push_back(std::move(*x));
  }
  return messages;
}

} // namespace

TEST_CASE("replies of real nn-trainer children decode to librasr's automaton") {
  for (auto [module, child_name] : {std::pair{"returnn_module", "SprintControl"},
                                    std::pair{"sprintrt_module", "sprintrt_control"}}) {
    INFO(module);
    auto replies = capture(std::string{module} + ".c2p");
    REQUIRE(replies.size() == 2);
    auto init = decode_init_reply(replies[0]);
    REQUIRE(init);
    CHECK(init->child_name == child_name);
    CHECK(init->version == 1);
    auto fsa = decode_fsa_reply(replies[1]);
    REQUIRE(fsa);
    CHECK(fsa->num_states == 4);
    REQUIRE(fsa->num_edges == 6);
    std::vector<uint32_t> edges(18);
    REQUIRE(copy_rows(fsa->edges, edges.data(), 18));
    // from, to and emission rows, as librasr gives them
    CHECK(edges == std::vector<uint32_t>{1, 2, 3, 0, 1, 2, 1, 2, 3, 1, 2, 3, 2, 1, 3, 2, 1, 3});
    for (size_t e = 0; e < 6; ++e)
      CHECK(element<float>(fsa->weights, e) == 0.0f);
  }
}

TEST_CASE("what the parent sent the real children decodes as init, the export and exit") {
  for (auto module : {"returnn_module", "sprintrt_module"}) {
    INFO(module);
    auto requests = capture(std::string{module} + ".p2c");
    REQUIRE(requests.size() == 3);
    auto init = decode_command(requests[0]);
    REQUIRE(init);
    CHECK(std::get<init_command>(*init).version == 1);
    auto fsa = decode_command(requests[1]);
    REQUIRE(fsa);
    CHECK(std::get<fsa_command>(*fsa).text == "tiny/r0/s0");
    auto exit = decode_command(requests[2]);
    REQUIRE(exit);
    CHECK(std::holds_alternative<exit_command>(*exit));
  }
}
