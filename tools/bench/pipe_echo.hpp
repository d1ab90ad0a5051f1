#pragma once

/// @file
/// The pipe baselines of `sprintrt-bench pool`: an echo child over two pipes
/// with 1 MiB buffers, i.e. a raw round trip through the kernel without any
/// codec, actor or io thread. Either `/bin/cat`, which streams (it writes back
/// while it still reads), or a forked copy of this process that reads each
/// length-prefixed message whole before writing it back, as a Sprint child
/// does (store and forward).

#include <sys/types.h>

#include <cstddef>
#include <vector>

namespace sprintrt::bench {

/// How the echo child echoes.
enum class echo_kind {
  /// `/bin/cat` (posix_spawn): streams, so both directions overlap.
  cat,
  /// A forked child (no exec) that reads a 4-byte length and the whole
  /// message, then writes a framed reply of the length the message's first 4
  /// bytes ask for (the same message for `round_trip(payload)`), in one
  /// write. Fork it before starting any thread.
  store_and_forward,
};

/// A child that echoes what it is sent. Not copyable; the child is ended
/// (EOF on its stdin) and reaped on destruction.
class pipe_echo {
public:
  /// Starts the child with its stdin and stdout on two fresh pipes (both
  /// set to 1 MiB with F_SETPIPE_SZ, close-on-exec on the parent's ends).
  /// Throws `std::runtime_error` if that fails.
  explicit pipe_echo(echo_kind kind);

  /// Closes the pipes and waits for the child.
  ~pipe_echo();

  pipe_echo(const pipe_echo&) = delete;
  pipe_echo& operator=(const pipe_echo&) = delete;

  /// Writes a 4-byte length and `payload` bytes and reads the same bytes
  /// back, with blocking reads and writes (for `cat`, from a second thread
  /// when the message does not fit in the pipes, so that neither side
  /// stalls). Buffers are kept between calls. Throws `std::runtime_error` on an I/O error or a
  /// mismatching echo.
  void round_trip(size_t payload);

  /// Store-and-forward only: writes a 4-byte length and `request_payload`
  /// bytes (at least 4) and reads back a 4-byte length and `reply_payload`
  /// bytes, as a request and its reply of those sizes travel to and from a
  /// Sprint child. Buffers on both sides are kept between calls. Throws
  /// `std::runtime_error` on an I/O error, a reply of the wrong length, or
  /// for a `cat` echo.
  void round_trip(size_t request_payload, size_t reply_payload);

private:
  echo_kind kind_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::vector<char> out_;
  std::vector<char> in_;
};

} // namespace sprintrt::bench
