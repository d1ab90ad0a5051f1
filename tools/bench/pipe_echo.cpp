#include "tools/bench/pipe_echo.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

namespace {

void read_all(int fd, char* data, size_t n) {
  if (!read_fully(fd, data, n, "pipe echo"))
    throw std::runtime_error("pipe echo: the child closed its stdout");
}

} // namespace

int serve_pipe_echo() {
  // The message's first 4 bytes (after its length) give the reply's length;
  // the reply goes out in one write, as sprint-sim writes its framed reply.
  std::vector<char> message;
  try {
    for (uint32_t length = 0;;) {
      read_all(0, reinterpret_cast<char*>(&length), 4);
      if (message.size() < 4 + size_t{length})
        message.resize(4 + size_t{length});
      read_all(0, message.data() + 4, length);
      uint32_t reply = length;
      if (length >= 4)
        std::memcpy(&reply, message.data() + 4, 4);
      if (message.size() < 4 + size_t{reply})
        message.resize(4 + size_t{reply}); // touched once, reused after
      std::memcpy(message.data(), &reply, 4);
      write_fully(1, message.data(), 4 + size_t{reply}, "pipe echo");
    }
  } catch (...) {
    return 0; // EOF: the parent is done
  }
}

pipe_echo::pipe_echo(echo_kind kind, const std::string& self)
    : kind_(kind), child_(spawn_program(kind == echo_kind::cat
                                            ? std::vector<std::string>{"/bin/cat"}
                                            : std::vector<std::string>{self, "--helper=pipe-echo"},
                                        true, 1 << 20)) {}

pipe_echo::~pipe_echo() {
  ::close(child_.to_child);
  ::close(child_.from_child);
  reap(child_.pid);
}

void pipe_echo::round_trip(size_t request_payload, size_t reply_payload) {
  // cat writes back while it reads: only messages that the pipes and its
  // own buffer (128 KiB) hold whole cannot stall both sides.
  if (kind_ == echo_kind::cat && (request_payload != reply_payload || request_payload > (1 << 17)))
    throw std::runtime_error("pipe echo: cat echoes small messages as they are");
  if (request_payload < 4)
    throw std::runtime_error("pipe echo: a request carries at least the 4-byte reply length");
  const auto reply_length = static_cast<uint32_t>(reply_payload);
  if (out_.size() != 4 + request_payload || in_.size() != 4 + reply_payload ||
      std::memcmp(out_.data() + 4, &reply_length, 4) != 0) {
    // Touch every page now, not in the timed calls.
    out_.assign(4 + request_payload, 'x');
    in_.assign(4 + reply_payload, 0);
    const auto length = static_cast<uint32_t>(request_payload);
    std::memcpy(out_.data(), &length, 4);
    std::memcpy(out_.data() + 4, &reply_length, 4);
  }
  write_fully(child_.to_child, out_.data(), out_.size(), "pipe echo");
  read_all(child_.from_child, in_.data(), in_.size());
  if (std::memcmp(in_.data(), &reply_length, 4) != 0)
    throw std::runtime_error("pipe echo: the reply has another length than asked for");
}

} // namespace sprintrt::bench
