// The pipe to a child: a message is written on the sender's thread when the
// pipe is idle and takes it whole, otherwise queued and written by the io
// thread, always in order and whole; after `close` nothing is written.

#include "process/channel_writer.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

using namespace sprintrt;
using namespace sprintrt::process;
using protocol::byte_buffer;

namespace {

byte_buffer bytes_of(const std::string& text) {
  byte_buffer out;
  out.append(text.data(), text.size());
  return out;
}

/// A pipe whose write end the writer adopts; the test reads the other end.
struct test_pipe {
  int read_fd = -1;
  int write_fd = -1;

  test_pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read_fd = fds[0];
    write_fd = fds[1];
  }
  ~test_pipe() {
    if (read_fd >= 0)
      ::close(read_fd);
  }

  /// Reads until `n` bytes or end of input; returns what came.
  std::string read(size_t n) {
    std::string got;
    char chunk[65536];
    while (got.size() < n) {
      ssize_t r = ::read(read_fd, chunk, std::min(sizeof chunk, n - got.size()));
      if (r <= 0)
        break;
      got.append(chunk, static_cast<size_t>(r));
    }
    return got;
  }

  /// Returns whether the write end is closed (end of input, nothing left).
  bool at_end() {
    char c;
    return ::read(read_fd, &c, 1) == 0;
  }
};

/// Pumps `writer` again after each completed write, as the channel does,
/// passing each completion to `each`.
void keep_pumping(channel_writer& writer, const channel_writer::written_handler& each) {
  writer.pump([&writer, each](const boost::system::error_code& ec, byte_buffer done) {
    each(ec, std::move(done));
    keep_pumping(writer, each);
  });
}

} // namespace

TEST_CASE("a message to an idle pipe is written on the sender's thread and its buffer comes "
          "back") {
  boost::asio::io_context io;
  test_pipe pipe;
  channel_writer writer;
  writer.open(io, pipe.write_fd);
  REQUIRE((::fcntl(pipe.write_fd, F_GETFL) & O_NONBLOCK) != 0);
  channel_writer::sent outcome;
  std::thread sender{[&] { outcome = writer.send(bytes_of("hello")); }};
  sender.join();
  REQUIRE_FALSE(outcome.queued);
  REQUIRE(outcome.written);
  REQUIRE(outcome.written->size() == 5);
  REQUIRE(pipe.read(5) == "hello");
  REQUIRE(io.poll() == 0); // nothing was left for the io thread
  writer.close();
}

TEST_CASE("what the pipe cannot take now is queued, and the io thread writes it whole, in order, "
          "before later messages") {
  boost::asio::io_context io;
  test_pipe pipe;
  channel_writer writer;
  writer.open(io, pipe.write_fd);
  // Larger than any pipe buffer: the direct write stops part-way.
  std::string large(4 << 20, 'L');
  for (size_t i = 0; i < large.size(); i += 4099)
    large[i] = static_cast<char>('a' + i % 26);
  auto first = writer.send(bytes_of(large));
  REQUIRE(first.queued);
  REQUIRE_FALSE(first.written);
  // The pipe has room again once read, yet this one must wait its turn.
  auto second = writer.send(bytes_of("after"));
  REQUIRE(second.queued);
  std::vector<std::string> written;
  keep_pumping(writer, [&](const boost::system::error_code& ec, byte_buffer done) {
    REQUIRE_FALSE(ec);
    written.emplace_back(reinterpret_cast<const char*>(done.data()), done.size());
  });
  std::string got;
  std::thread reader{[&] { got = pipe.read(large.size() + 5); }};
  while (written.size() < 2)
    io.run_one();
  reader.join();
  REQUIRE(got == large + "after");
  REQUIRE(written == std::vector<std::string>{large, "after"});
  writer.close();
}

TEST_CASE("close_when_drained closes the pipe after the queued messages; after close, messages "
          "are dropped") {
  boost::asio::io_context io;
  test_pipe pipe;
  channel_writer writer;
  writer.open(io, pipe.write_fd);
  writer.enqueue(bytes_of("exit"));
  writer.close_when_drained();
  keep_pumping(writer, [](const boost::system::error_code& ec, byte_buffer) { REQUIRE_FALSE(ec); });
  io.run();
  REQUIRE(pipe.read(4) == "exit");
  REQUIRE(pipe.at_end());
  writer.close();
  auto late = writer.send(bytes_of("late"));
  REQUIRE_FALSE(late.queued);
  REQUIRE_FALSE(late.written);
}

TEST_CASE("a failed queued write is reported with its error") {
  // The io thread runs with SIGPIPE blocked; so does this test's.
  sigset_t sigpipe, before;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  REQUIRE(pthread_sigmask(SIG_BLOCK, &sigpipe, &before) == 0);
  {
    boost::asio::io_context io;
    test_pipe pipe;
    channel_writer writer;
    writer.open(io, pipe.write_fd);
    ::close(pipe.read_fd);
    pipe.read_fd = -1;
    writer.enqueue(bytes_of("nobody reads this"));
    boost::system::error_code failure;
    writer.pump([&](const boost::system::error_code& ec, byte_buffer) { failure = ec; });
    io.run();
    REQUIRE(failure == boost::asio::error::broken_pipe);
    writer.close();
  }
  // Take the SIGPIPE the write raised before unblocking.
  timespec zero{};
  while (sigtimedwait(&sigpipe, nullptr, &zero) == SIGPIPE) {
  }
  REQUIRE(pthread_sigmask(SIG_SETMASK, &before, nullptr) == 0);
}
