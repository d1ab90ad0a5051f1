#pragma once

/// @file
/// The first four bytes of a `remote_wire_fuzzer` input: which value of the
/// remote interface (include/sprintrt/remote_interface.hpp) the rest holds,
/// and the trainer's job it answers. The fuzz target reads them, the seed
/// generator writes them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_input.hpp"

namespace sprintrt::fuzz {

/// What crosses the network, and which end reads it.
enum class remote_message : uint8_t {
  /// A trainer's segment (`remote_segment`), at the server.
  segment,
  /// A pool's loss and error signal (`remote_loss`), at the trainer.
  loss,
  /// A pool's automaton (`remote_fsa`), at the trainer.
  fsa,
  /// A trainer's automaton query (`fsa_query`), at the server.
  fsa_query,
  /// A trainer's handshake: its interface version and options key (two
  /// strings), at the server.
  hello,
};

/// The options of the server in a handshake: its options key is what a
/// trainer's must equal.
constexpr std::string_view server_options_json =
    R"({"sprintExecPath": "/opt/rasr/nn-trainer", "numInstances": 4,
        "sprintConfigStr": "--config=$SETUP_DIR/training.config --*.action=python-control",
        "sprintControlConfig": {"scale": 0.5}})";

/// The number of kinds of `remote_message`.
constexpr uint8_t remote_message_kinds = 5;

/// A value on its way to one end, and what that end asked for.
struct remote_wire_case {
  remote_message message = remote_message::segment;
  /// The shape of the trainer's job a `loss` answers: 1 to 64 each.
  size_t rows = 1;
  size_t cols = 1;
  /// Whether the trainer's caller stopped waiting (the job's gate is closed).
  bool gate_closed = false;

  /// Reads a case from the front of `in`.
  static remote_wire_case read(fuzz_input& in) {
    remote_wire_case c;
    c.message = static_cast<remote_message>(in.byte() % remote_message_kinds);
    c.rows = 1 + in.byte() % 64;
    c.cols = 1 + in.byte() % 64;
    c.gate_closed = (in.byte() & 1) != 0;
    return c;
  }

  /// Returns the bytes that `read` reads as this case.
  std::string header() const {
    return {static_cast<char>(message), static_cast<char>(rows - 1), static_cast<char>(cols - 1),
            static_cast<char>(gate_closed ? 1 : 0)};
  }
};

} // namespace sprintrt::fuzz
