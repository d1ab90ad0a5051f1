#pragma once

/// @file
/// The pipe baselines: an echo child over two pipes of 1 MiB, a round trip
/// through the kernel without codec, actor or io thread (BENCHMARKS.md,
/// "Small segments").

#include <cstddef>
#include <string>
#include <vector>

#include "tools/bench/child_program.hpp"

namespace sprintrt::bench {

/// How the echo child echoes.
enum class echo_kind {
  /// `/bin/cat`: streams, so both directions overlap.
  cat,
  /// `--helper=pipe-echo`: reads a length-prefixed message whole, then
  /// writes a framed reply of the length its first 4 bytes ask for, in one
  /// write, as a Sprint child does.
  store_and_forward,
};

/// An echo child, ended (EOF on its stdin) and reaped on destruction.
class pipe_echo {
public:
  /// Starts the child (`self`: this program). Throws `std::runtime_error`.
  pipe_echo(echo_kind kind, const std::string& self);

  /// Closes the pipes and waits for the child.
  ~pipe_echo();

  pipe_echo(const pipe_echo&) = delete;
  pipe_echo& operator=(const pipe_echo&) = delete;

  /// Writes a 4-byte length and `request_payload` bytes (at least 4) and
  /// reads back a 4-byte length and `reply_payload` bytes (`cat`: equal and
  /// small enough for the pipes). Throws `std::runtime_error` on an I/O
  /// error or a reply of the wrong length.
  void round_trip(size_t request_payload, size_t reply_payload);

private:
  echo_kind kind_;
  child_program child_;
  std::vector<char> out_;
  std::vector<char> in_;
};

/// The store-and-forward child's loop on fds 0 and 1 until EOF
/// (`--helper=pipe-echo`); returns its exit status.
int serve_pipe_echo();

} // namespace sprintrt::bench
