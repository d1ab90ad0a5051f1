// The pipe channel on its own: a child's last message is delivered even
// when the child exits right after writing it, a channel opened after the
// io thread stopped reports at once, and nothing is left behind.

#include "runtime/sprint_channel.hpp"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>

#include "runtime/io_thread.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

/// Collects what a channel reports until it is down.
struct collector {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<size_t> message_sizes;
  std::optional<runtime::child_down> down;

  runtime::channel_events events() {
    runtime::channel_events e;
    e.message = [this](protocol::byte_buffer msg) {
      std::lock_guard<std::mutex> guard{mutex};
      message_sizes.push_back(msg.size());
    };
    e.down = [this](runtime::child_down d) {
      std::lock_guard<std::mutex> guard{mutex};
      down = std::move(d);
      changed.notify_all();
    };
    return e;
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

} // namespace

TEST_CASE("a message written right before the child exits is delivered") {
  test::fd_snapshot fds;
  {
    runtime::io_thread io;
    for (size_t bytes : {size_t{1000}, size_t{1} << 20}) {
      for (int round = 0; round < 25; ++round) {
        INFO(bytes << " bytes, round " << round);
        collector seen;
        auto channel =
            runtime::sprint_channel::open(io, burst_options(bytes), "burst", seen.events());
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
  runtime::io_thread io;
  io.stop();
  collector seen;
  auto channel = runtime::sprint_channel::open(io, burst_options(10), "late", seen.events());
  REQUIRE(seen.wait_down());
  CHECK(seen.down->cause == errc::cancelled);
  CHECK(seen.down->pid == -1);
  CHECK(seen.message_sizes.empty());
}

TEST_CASE("messages completed before a framing error are still delivered") {
  runtime::io_thread io;
  collector seen;
  auto opts = burst_options(100);
  opts.sprint_config.push_back({{word_piece::literal, "--*.burst-garbage=1"}});
  auto channel = runtime::sprint_channel::open(io, opts, "garbage", seen.events());
  REQUIRE(seen.wait_down());
  REQUIRE(seen.message_sizes.size() == 1);
  CHECK(seen.message_sizes[0] == 109);
  // Whether the child's exit or the bad prefix is seen first, a bad prefix
  // that arrives is reported as the cause.
  if (seen.down->cause)
    CHECK_THAT(render(seen.down->cause), Catch::Contains("length prefix -1 is not positive") ||
                                             Catch::Contains("closed its pipe"));
  io.stop();
}
