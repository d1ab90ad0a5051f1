#pragma once

/// @file
/// The pipe baselines: an echo child over two pipes with 1 MiB buffers, a
/// raw round trip through the kernel without any codec, actor or io thread.
/// Either `/bin/cat`, which streams (it writes back while it still reads),
/// or this program as `sprintrt-bench --helper=pipe-echo`, which reads each
/// length-prefixed message whole before it writes the reply, as a Sprint
/// child does (store and forward).

#include <cstddef>
#include <string>
#include <vector>

#include "tools/bench/child_program.hpp"

namespace sprintrt::bench {

/// How the echo child echoes.
enum class echo_kind {
  /// `/bin/cat`: streams, so both directions overlap.
  cat,
  /// `--helper=pipe-echo`: reads a 4-byte length and the whole message, then
  /// writes a framed reply of the length the message's first 4 bytes ask
  /// for, in one write.
  store_and_forward,
};

/// A child that echoes what it is sent, ended (EOF on its stdin) and reaped
/// on destruction.
class pipe_echo {
public:
  /// Starts the child (`self`: this program, for the store-and-forward
  /// helper). Throws `std::runtime_error` if that fails.
  pipe_echo(echo_kind kind, const std::string& self);

  /// Closes the pipes and waits for the child.
  ~pipe_echo();

  pipe_echo(const pipe_echo&) = delete;
  pipe_echo& operator=(const pipe_echo&) = delete;

  /// Writes a 4-byte length and `request_payload` bytes (at least 4) and
  /// reads back a 4-byte length and `reply_payload` bytes, as a request and
  /// its reply travel to and from a Sprint child (`cat` echoes: both sizes
  /// equal, small enough for the pipes to hold whole). Buffers are kept
  /// between calls. Throws `std::runtime_error` on an I/O error or a reply
  /// of the wrong length.
  void round_trip(size_t request_payload, size_t reply_payload);

private:
  echo_kind kind_;
  child_program child_;
  std::vector<char> out_;
  std::vector<char> in_;
};

/// The store-and-forward child's loop on fds 0 and 1 until EOF (what
/// `--helper=pipe-echo` runs); returns its exit status.
int serve_pipe_echo();

} // namespace sprintrt::bench
