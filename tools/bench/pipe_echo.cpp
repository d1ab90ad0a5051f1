#include "tools/bench/pipe_echo.hpp"

#include "tools/bench/bench_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

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

// The store-and-forward child: fd 0 in, fd 1 out, until EOF. The message's
// first 4 bytes (after its length) give the reply's length; the reply goes
// out in one write, as sprint-sim writes its framed reply. For a reply of
// the message's own length the message itself goes back (an echo).
[[noreturn]] void serve_echo() {
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
      ::_exit(0); // EOF: the parent is done
    }
  }
}

} // namespace

pipe_echo::pipe_echo(echo_kind kind) : kind_(kind) {
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
  if (kind == echo_kind::store_and_forward) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to[0], 0);
      ::dup2(from[1], 1);
      ::closefrom(3);
      serve_echo();
    }
    int error = errno;
    ::close(to[0]);
    ::close(from[1]);
    to_child_ = to[1];
    from_child_ = from[0];
    if (pid_ < 0) {
      ::close(to_child_);
      ::close(from_child_);
      fail("fork", error);
    }
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets; every other end closes at exec.
  posix_spawn_file_actions_adddup2(&actions, to[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from[1], 1);
  char arg0[] = "cat";
  char* argv[] = {arg0, nullptr};
  int rc = ::posix_spawn(&pid_, "/bin/cat", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to[0]);
  ::close(from[1]);
  to_child_ = to[1];
  from_child_ = from[0];
  if (rc != 0) {
    ::close(to_child_);
    ::close(from_child_);
    pid_ = -1;
    fail("posix_spawn /bin/cat", rc);
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

void pipe_echo::round_trip(size_t payload) {
  const size_t total = 4 + payload;
  if (out_.size() != total || in_.size() != total) {
    // Touch every page now, not in the timed calls.
    out_.assign(total, 'x');
    in_.assign(total, 0);
    const auto length = static_cast<uint32_t>(payload);
    std::memcpy(out_.data(), &length, 4);
    if (payload >= 4)
      std::memcpy(out_.data() + 4, &length, 4); // the reply's length: an echo
  }
  // The store-and-forward child reads everything before it writes; for cat,
  // both pipes and its own buffer (128 KiB) hold small messages whole.
  if (kind_ == echo_kind::store_and_forward || total <= pipe_size / 2) {
    write_all(to_child_, out_.data(), total);
    read_all(from_child_, in_.data(), total);
  } else {
    std::exception_ptr write_error;
    std::thread writer{[this, total, &write_error] {
      try {
        write_all(to_child_, out_.data(), total);
      } catch (...) {
        write_error = std::current_exception();
      }
    }};
    std::exception_ptr read_error;
    try {
      read_all(from_child_, in_.data(), total);
    } catch (...) {
      read_error = std::current_exception();
    }
    writer.join();
    if (read_error)
      std::rethrow_exception(read_error);
    if (write_error)
      std::rethrow_exception(write_error);
  }
  if (std::memcmp(in_.data(), out_.data(), 4) != 0)
    throw std::runtime_error("pipe echo: the echo differs from what was sent");
}

void pipe_echo::round_trip(size_t request_payload, size_t reply_payload) {
  if (kind_ != echo_kind::store_and_forward)
    throw std::runtime_error("pipe echo: replies of another size need the store-and-forward echo");
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
