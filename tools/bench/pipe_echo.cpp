#include "tools/bench/pipe_echo.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "tools/bench/bench_support.hpp"

extern char** environ;

namespace sprintrt::bench {

namespace {

constexpr int pipe_size = 1 << 20;

[[noreturn]] void fail(const std::string& what, int error = errno) {
  throw std::runtime_error("pipe echo: " + what + ": " + std::strerror(error));
}

void write_all(int fd, const char* data, size_t n) {
  write_fully(fd, data, n, "pipe echo");
}

void read_all(int fd, char* data, size_t n) {
  if (!read_fully(fd, data, n, "pipe echo"))
    throw std::runtime_error("pipe echo: the child closed its stdout");
}

} // namespace

int serve_pipe_echo() {
  // The message's first 4 bytes (after its length) give the reply's length;
  // the reply goes out in one write, as sprint-sim writes its framed reply.
  std::vector<char> message;
  for (;;) {
    uint32_t length = 0;
    try {
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
      write_all(1, message.data(), 4 + size_t{reply});
    } catch (...) {
      return 0; // EOF: the parent is done
    }
  }
}

pipe_echo::pipe_echo(echo_kind kind, const std::string& self) : kind_(kind) {
  int to[2];
  int from[2];
  if (::pipe2(to, O_CLOEXEC) != 0)
    fail("pipe2");
  if (::pipe2(from, O_CLOEXEC) != 0) {
    int error = errno;
    ::close(to[0]);
    ::close(to[1]);
    fail("pipe2", error);
  }
  // Best effort, as the runtime: the limit may be lower for unprivileged users.
  ::fcntl(to[1], F_SETPIPE_SZ, pipe_size);
  ::fcntl(from[1], F_SETPIPE_SZ, pipe_size);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets; every other end closes at exec.
  posix_spawn_file_actions_adddup2(&actions, to[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from[1], 1);
  const std::string program = kind == echo_kind::cat ? "/bin/cat" : self;
  std::string arg0 = kind == echo_kind::cat ? "cat" : self;
  std::string arg1 = "--helper=pipe-echo";
  char* argv[] = {arg0.data(), kind == echo_kind::cat ? nullptr : arg1.data(), nullptr};
  int rc = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to[0]);
  ::close(from[1]);
  to_child_ = to[1];
  from_child_ = from[0];
  if (rc != 0) {
    ::close(to_child_);
    ::close(from_child_);
    to_child_ = from_child_ = pid_ = -1;
    fail("posix_spawn " + program, rc);
  }
}

pipe_echo::~pipe_echo() {
  if (to_child_ >= 0)
    ::close(to_child_);
  if (from_child_ >= 0)
    ::close(from_child_);
  if (pid_ > 0) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void pipe_echo::round_trip(size_t request_payload, size_t reply_payload) {
  // cat writes back while it reads: only messages that the pipes and its
  // own buffer (128 KiB) hold whole cannot stall both sides.
  if (kind_ == echo_kind::cat && (request_payload != reply_payload || request_payload > (1 << 17)))
    throw std::runtime_error("pipe echo: cat echoes small messages as they are");
  if (request_payload < 4)
    throw std::runtime_error("pipe echo: a request carries at least the 4-byte reply length");
  const size_t out_total = 4 + request_payload;
  const size_t in_total = 4 + reply_payload;
  const auto reply_length = static_cast<uint32_t>(reply_payload);
  if (out_.size() != out_total || in_.size() != in_total ||
      std::memcmp(out_.data() + 4, &reply_length, 4) != 0) {
    // Touch every page now, not in the timed calls.
    out_.assign(out_total, 'x');
    in_.assign(in_total, 0);
    const auto length = static_cast<uint32_t>(request_payload);
    std::memcpy(out_.data(), &length, 4);
    std::memcpy(out_.data() + 4, &reply_length, 4);
  }
  write_all(to_child_, out_.data(), out_total);
  read_all(from_child_, in_.data(), in_total);
  if (std::memcmp(in_.data(), &reply_length, 4) != 0)
    throw std::runtime_error("pipe echo: the reply has another length than asked for");
}

} // namespace sprintrt::bench
