// The pipe channel on its own: a child's last message is delivered even
// when the child exits right after writing it, a channel opened after the
// io thread stopped reports at once, messages written on the caller's
// thread and by the io thread keep their order, and nothing is left behind.

#include "process/sprint_channel.hpp"

#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "config/wire_format.hpp"
#include "process/child_reaper.hpp"
#include "process/io_thread.hpp"
#include "process/output_tail.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

/// Collects what a channel reports until it is down.
struct collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<size_t> message_sizes;
  std::optional<process::child_down> down;
  pid_t pid = -1;

  process::channel_events events() {
    process::channel_events e;
    e.started = [this](pid_t child, const std::vector<std::string>&) {
      std::lock_guard<std::mutex> guard{mutex};
      pid = child;
      changed.notify_all();
    };
    e.message = [this](protocol::byte_buffer msg) {
      std::lock_guard<std::mutex> guard{mutex};
      message_sizes.push_back(msg.size());
    };
    e.down = [this](process::child_down d) {
      std::lock_guard<std::mutex> guard{mutex};
      down = std::move(d);
      changed.notify_all();
    };
    return e;
  }

  bool wait_started() {
    std::unique_lock<std::mutex> guard{mutex};
    return changed.wait_for(guard, std::chrono::seconds{10}, [this] { return pid >= 0; });
  }

  bool wait_down() {
    std::unique_lock<std::mutex> guard{mutex};
    return changed.wait_for(guard, std::chrono::seconds{10}, [this] { return down.has_value(); });
  }
};

sprint_options burst_options(size_t bytes) {
  sprint_options opts;
  opts.sprint_exec_path = SPRINTRT_BURST_CHILD_PATH;
  opts.sprint_config = {{{word_piece::literal, "--*.burst-bytes=" + std::to_string(bytes)}}};
  return opts;
}

/// A burst child that closes its reply pipe and then waits to be killed,
/// `exit_grace` after the channel saw the pipe close.
sprint_options closing_reply_pipe(std::chrono::milliseconds exit_grace) {
  auto opts = burst_options(100);
  opts.exit_grace = exit_grace;
  opts.sprint_config.push_back({{word_piece::literal, "--*.close-reply-pipe=1"}});
  return opts;
}

/// Runs the burst child for `opts` on a channel of its own until it is
/// down, hands what the channel reported to `check`, then checks that
/// nothing was left behind.
template <class Check>
void with_burst_child(const sprint_options& opts, Check check) {
  test::fd_snapshot fds;
  {
    process::io_thread io;
    collector seen;
    auto channel = process::sprint_channel::open(io, opts, "burst", seen.events());
    REQUIRE(seen.wait_down());
    check(seen);
    io.stop();
  }
  test::check_nothing_left(fds);
}

} // namespace

TEST_CASE("a message written right before the child exits is delivered") {
  test::fd_snapshot fds;
  {
    process::io_thread io;
    for (size_t bytes : {size_t{1000}, size_t{1} << 20}) {
      for (int round = 0; round < 25; ++round) {
        INFO(bytes << " bytes, round " << round);
        collector seen;
        auto channel =
            process::sprint_channel::open(io, burst_options(bytes), "burst", seen.events());
        REQUIRE(seen.wait_down());
        // The child's own status, whichever the channel saw first: the end
        // of the pipe ("closed its pipe", a cause) or the exit.
        CHECK(seen.down->clean_exit());
        REQUIRE(seen.message_sizes.size() == 1);
        CHECK(seen.message_sizes[0] == bytes + 9);
      }
    }
    io.stop();
  }
  CHECK(test::child_processes().empty());
  CHECK(fds.leaked_fds().empty());
}

TEST_CASE("a channel opened after the io thread stopped is down at once") {
  process::io_thread io;
  io.stop();
  collector seen;
  auto channel = process::sprint_channel::open(io, burst_options(10), "late", seen.events());
  REQUIRE(seen.wait_down());
  CHECK(seen.down->cause == errc::cancelled);
  CHECK(seen.down->pid == -1);
  CHECK(seen.message_sizes.empty());
}

TEST_CASE("a burst of 80000 raw pickles in one write arrives whole, message by message") {
  auto opts = burst_options(0);
  opts.framing = pipe_framing::raw;
  opts.sprint_config.push_back({{word_piece::literal, "--*.raw-burst=80000"}});
  with_burst_child(opts, [](collector& seen) {
    CHECK(seen.down->clean_exit());
    CHECK(seen.message_sizes.size() == 80000);
    CHECK(std::all_of(seen.message_sizes.begin(), seen.message_sizes.end(),
                      [](size_t n) { return n == 4; }));
  });
}

TEST_CASE("a stdout flood is kept to its last 64 KiB and the message still arrives") {
  auto opts = burst_options(100);
  opts.sprint_config.push_back({{word_piece::literal, "--*.stdout-flood=20000000"}});
  with_burst_child(opts, [](collector& seen) {
    CHECK(seen.down->clean_exit());
    REQUIRE(seen.message_sizes.size() == 1);
    CHECK(seen.down->output.size() == process::output_tail::capacity);
    CHECK(seen.down->output.find_first_not_of('o') == std::string::npos);
  });
}

TEST_CASE("a child that closes only its reply pipe is killed and reported") {
  with_burst_child(closing_reply_pipe(std::chrono::milliseconds{200}), [](collector& seen) {
    REQUIRE(seen.down->cause);
    CHECK_THAT(render(seen.down->cause), Catch::Contains("the child closed its pipe"));
    CHECK(seen.down->exit_code() == -9);
    CHECK(seen.message_sizes.empty());
  });
}

// Kill signal 0 makes the children of these tests survive their SIGKILL,
// like a child in uninterruptible sleep (a hung NFS mount), which no signal
// can end until the kernel lets it go.

TEST_CASE("a killed child that does not exit is given up on, then reaped when it exits") {
  using namespace std::chrono;
  auto opts = closing_reply_pipe(milliseconds{100});
  test::fd_snapshot fds;
  {
    process::io_thread io;
    test::kill_signal_override no_kills{io, 0};
    collector seen;
    auto began = steady_clock::now();
    auto channel = process::sprint_channel::open(io, opts, "stuck", seen.events());
    REQUIRE(seen.wait_down());
    auto took = steady_clock::now() - began;
    // Killed exit_grace after the pipe closed, given up on kill_wait later.
    CHECK(took >= process::kill_wait + opts.exit_grace);
    CHECK(took < process::kill_wait + opts.exit_grace + seconds{3});
    CHECK(seen.down->wait_status == process::not_reaped);
    CHECK(seen.down->exit_code() == -9);
    CHECK_THAT(seen.down->describe(), Catch::Contains("did not exit within 1000 ms of SIGKILL"));
    REQUIRE(seen.down->cause);
    CHECK_THAT(render(seen.down->cause), Catch::Contains("the child closed its pipe"));
    // Still running, and still watched: once it exits, it is reaped.
    test::check_reaped_once_killed(seen.down->pid);
    io.stop();
  }
  test::check_nothing_left(fds);
}

TEST_CASE("stopping the io thread takes no longer than its grace and kill_wait for a stuck child") {
  using namespace std::chrono;
  // The channel itself would wait a minute before it kills: the stop must not.
  auto opts = closing_reply_pipe(seconds{60});
  test::fd_snapshot fds;
  pid_t pid = -1;
  {
    process::io_thread io;
    test::kill_signal_override no_kills{io, 0};
    collector seen;
    auto channel = process::sprint_channel::open(io, opts, "stuck", seen.events());
    REQUIRE(seen.wait_started());
    pid = seen.pid;
    auto began = steady_clock::now();
    io.stop(milliseconds{200});
    auto took = steady_clock::now() - began;
    CHECK(took >= milliseconds{200} + process::kill_wait);
    CHECK(took < milliseconds{200} + process::kill_wait + seconds{2});
    REQUIRE(seen.wait_down());
    CHECK(seen.down->wait_status == process::not_reaped);
  }
  // Left to a thread that reaps it once it exits. The io thread that
  // spawned it has ended, so PR_SET_PDEATHSIG may have killed it already:
  // it must be reaped either way (no zombie).
  ::kill(pid, SIGKILL);
  CHECK(test::wait_until_reaped(pid, std::chrono::seconds{5}));
  test::check_nothing_left(fds);
}

TEST_CASE("a message handler that throws fails its channel, which still reports down") {
  // Out of memory, or a bug in whoever takes the messages: the channel kills
  // its child and reports, and the process and the io thread go on. The
  // child either waits to be killed or exits at once, racing its message
  // (then the read handler or, rarely, the final drain takes it; both catch).
  for (const char* then_wait : {"--*.then-wait=1", "--*.then-wait=0"}) {
    INFO(then_wait);
    test::fd_snapshot fds;
    {
      process::io_thread io;
      for (int round = 0; round < 10; ++round) {
        collector seen;
        auto events = seen.events();
        events.message = [](protocol::byte_buffer) { throw std::runtime_error("no room left"); };
        auto opts = burst_options(100);
        opts.sprint_config.push_back({{word_piece::literal, then_wait}});
        auto channel = process::sprint_channel::open(io, opts, "thrower", events);
        REQUIRE(seen.wait_down());
        REQUIRE(seen.down->cause);
        CHECK(seen.down->cause == errc::io_error);
        CHECK_THAT(render(seen.down->cause),
                   Catch::Contains("handling the child's messages failed: no room left"));
      }
      // The io thread still serves channels.
      collector after;
      auto channel = process::sprint_channel::open(io, burst_options(10), "after", after.events());
      REQUIRE(after.wait_down());
      CHECK(after.message_sizes.size() == 1);
      io.stop();
    }
    test::check_nothing_left(fds);
  }
}

TEST_CASE("messages completed before a framing error are still delivered") {
  process::io_thread io;
  collector seen;
  auto opts = burst_options(100);
  opts.sprint_config.push_back({{word_piece::literal, "--*.burst-garbage=1"}});
  auto channel = process::sprint_channel::open(io, opts, "garbage", seen.events());
  REQUIRE(seen.wait_down());
  REQUIRE(seen.message_sizes.size() == 1);
  CHECK(seen.message_sizes[0] == 109);
  // Whether the child's exit or the bad prefix is seen first, the channel
  // reports why it ended: the bad prefix, or the pipe closing after it.
  REQUIRE(seen.down->cause);
  CHECK_THAT(render(seen.down->cause), Catch::Contains("length prefix -1 is not positive") ||
                                           Catch::Contains("closed its pipe"));
  io.stop();
}

namespace {

/// Collects a channel's reports, keeping the messages and the buffers that
/// come back from writes.
struct message_collector {
  std::mutex mutex;
  std::condition_variable changed;
  bool started = false;
  std::vector<protocol::byte_buffer> messages;
  size_t buffers_back = 0;
  std::optional<process::child_down> down;

  process::channel_events events() {
    process::channel_events e;
    e.started = [this](pid_t, const std::vector<std::string>&) {
      std::lock_guard<std::mutex> guard{mutex};
      started = true;
      changed.notify_all();
    };
    e.message = [this](protocol::byte_buffer msg) {
      std::lock_guard<std::mutex> guard{mutex};
      messages.push_back(std::move(msg));
      changed.notify_all();
    };
    e.sent = [this](protocol::byte_buffer) {
      std::lock_guard<std::mutex> guard{mutex};
      ++buffers_back;
      changed.notify_all();
    };
    e.down = [this](process::child_down d) {
      std::lock_guard<std::mutex> guard{mutex};
      down = std::move(d);
      changed.notify_all();
    };
    return e;
  }

  template <class Predicate>
  bool wait_for(Predicate done) {
    std::unique_lock<std::mutex> guard{mutex};
    return changed.wait_for(guard, std::chrono::seconds{30}, done);
  }
};

} // namespace

TEST_CASE("messages sent back to back, written at once or by the io thread, arrive in order") {
  test::fd_snapshot fds;
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 6, 16);
  auto opts = test::sim_options(test::corpus_path(dir));
  auto format = config::wire_format_of(opts);
  {
    process::io_thread io;
    message_collector seen;
    auto channel = process::sprint_channel::open(io, opts, "sim", seen.events());
    REQUIRE(seen.wait_for([&] { return seen.started; }));
    // Nothing is queued and the pipe is empty: the first message goes out
    // on this thread, and its buffer comes straight back.
    protocol::byte_buffer init;
    REQUIRE_FALSE(protocol::encode_init_command(init, format));
    size_t returned =
        channel.send(std::move(init), protocol::max_init_reply_size).has_value() ? 1 : 0;
    CHECK(returned == 1);
    REQUIRE(seen.wait_for([&] { return seen.messages.size() == 1; }));
    // Small and large (5 MB, more than the pipe holds) requests, all sent
    // before any reply: the child must read them one after the other.
    const size_t dim = 64;
    std::vector<size_t> frames{3, 20000, 5, 7, 20000, 2};
    std::vector<std::vector<float>> inputs;
    for (size_t i = 0; i < frames.size(); ++i) {
      inputs.push_back(test::random_log_posteriors(frames[i], dim, 10 + i));
      protocol::byte_buffer request;
      REQUIRE_FALSE(protocol::encode_loss_command(request, format, segments[i].name, frames[i], dim,
                                                  inputs[i].data(), dim));
      returned += channel.send(std::move(request), protocol::max_loss_reply_size(frames[i], dim))
                          .has_value()
                      ? 1
                      : 0;
    }
    REQUIRE(seen.wait_for([&] { return seen.messages.size() == 1 + frames.size(); }));
    // Every buffer came back once: from `send`, or through `sent`.
    REQUIRE(seen.wait_for([&] { return returned + seen.buffers_back == 1 + frames.size(); }));
    for (size_t i = 0; i < frames.size(); ++i) {
      INFO("request " << i << " (" << frames[i] << " frames)");
      auto value = protocol::read_pickle(seen.messages[1 + i].bytes());
      REQUIRE(value);
      auto reply = protocol::decode_loss_reply(*value, frames[i], dim);
      REQUIRE(reply);
      auto expected =
          test::reference_loss(test::corpus_path(dir), segments[i].name, inputs[i], dim);
      CHECK(reply->loss == expected.loss);
    }
    protocol::byte_buffer exit;
    REQUIRE_FALSE(protocol::encode_exit_command(exit, format));
    channel.stop(std::chrono::milliseconds{5000}, std::move(exit));
    REQUIRE(seen.wait_for([&] { return seen.down.has_value(); }));
    CHECK(seen.down->clean_exit());
    // No buffer came back twice (the exit message's returns through `sent`).
    CHECK(returned + seen.buffers_back == 2 + frames.size());
    io.stop();
  }
  CHECK(test::child_processes().empty());
  CHECK(fds.leaked_fds().empty());
}
