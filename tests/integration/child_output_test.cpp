// Where a Sprint child's own stdout and stderr go (`childOutput`): logged
// at info with the worker's name, appended to a file per worker, or
// written to the trainer's own stdout and stderr; and what the error
// messages quote of it in each mode.

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "actors/worker/worker_requests.hpp"
#include "process/io_thread.hpp"
#include "process/output_file.hpp"
#include "process/output_tail.hpp"
#include "process/sprint_channel.hpp"
#include "sprintrt/logging.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// The output of every child below, and what its error messages quote.
constexpr const char* said = "out: RASR says hi\nerr: RASR says hi\n";

/// A child that prints one line on stdout, one on stderr, and exits 3.
sprint_options chatty_child(child_output_mode mode) {
  sprint_options opts;
  opts.sprint_exec_path = SPRINTRT_FD_PROBE_PATH;
  opts.env.set = {{"SPRINTRT_PROBE_SAY", "RASR says hi"}, {"SPRINTRT_PROBE_EXIT", "3"}};
  opts.child_output = std::move(mode);
  return opts;
}

/// Runs `opts`' child on a channel named "pool 0 worker 1" until it is
/// down; returns the down report (none if it did not come within 10 s).
std::optional<process::child_down> run_child(const sprint_options& opts) {
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<process::child_down> down;
  process::io_thread io;
  process::channel_events events;
  events.down = [&](process::child_down d) {
    std::lock_guard<std::mutex> guard{mutex};
    down = std::move(d);
    changed.notify_all();
  };
  auto channel = process::sprint_channel::open(io, opts, "pool 0 worker 1", events);
  {
    std::unique_lock<std::mutex> guard{mutex};
    changed.wait_for(guard, std::chrono::seconds{10}, [&] { return down.has_value(); });
  }
  io.stop();
  std::lock_guard<std::mutex> guard{mutex};
  return down;
}

/// A logger whose records the test reads; registered under `name`, or made
/// sprintrt's logger for an empty name, until destruction.
struct captured_logger {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  std::shared_ptr<spdlog::logger> logger;
  std::string name;

  explicit captured_logger(std::string logger_name) : name(std::move(logger_name)) {
    logger = std::make_shared<spdlog::logger>(name.empty() ? "captured" : name, sink);
    logger->set_level(spdlog::level::trace);
    logger->set_pattern("%l %v");
    if (name.empty())
      set_logger(logger);
    else
      spdlog::register_logger(logger);
  }
  ~captured_logger() {
    if (name.empty())
      set_logger(nullptr);
    else
      spdlog::drop(name);
  }

  /// The records that mention the worker, as "level text".
  std::vector<std::string> worker_lines() const {
    std::vector<std::string> lines;
    for (auto& line : sink->last_formatted())
      if (line.find("[pool 0 worker 1]") != std::string::npos)
        lines.push_back(line.substr(0, line.find_last_not_of("\r\n") + 1));
    return lines;
  }
};

void check_quoted_in_errors(const std::optional<process::child_down>& report) {
  REQUIRE(report);
  const auto& down = *report;
  CHECK(down.output == said);
  CHECK(down.exit_code() == 3);
  // Whether the channel saw the pipe close before the exit (a cause first)
  // is timing; the quote is not.
  CHECK_THAT(describe_down(down), Catch::EndsWith("Sprint child pid " + std::to_string(down.pid) +
                                                  " exited with status 3; its output ended with:\n"
                                                  "out: RASR says hi\nerr: RASR says hi"));
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

} // namespace

TEST_CASE("childOutput log: each line at info with the worker's name, to sprintrt.child") {
  captured_logger child_logger{process::output_tail::logger_name};
  captured_logger sprintrt_logger{""};
  auto down = run_child(chatty_child({child_output_mode::log, ""}));
  CHECK(child_logger.worker_lines() ==
        std::vector<std::string>{"info [pool 0 worker 1] out: RASR says hi",
                                 "info [pool 0 worker 1] err: RASR says hi"});
  check_quoted_in_errors(down);
  // sprintrt's logger got the channel's own records only.
  for (const auto& line : sprintrt_logger.worker_lines())
    CHECK(line.find("RASR says hi") == std::string::npos);
}

TEST_CASE("childOutput log goes to sprintrt's logger when no sprintrt.child is registered") {
  REQUIRE(spdlog::get(process::output_tail::logger_name) == nullptr);
  captured_logger sprintrt_logger{""};
  auto down = run_child(chatty_child({}));
  auto lines = sprintrt_logger.worker_lines();
  CHECK(std::count(lines.begin(), lines.end(), "info [pool 0 worker 1] out: RASR says hi") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "info [pool 0 worker 1] err: RASR says hi") == 1);
  check_quoted_in_errors(down);
}

TEST_CASE("childOutput file: the output appended to DIR/<worker>.log, DIR made if missing") {
  test::temp_dir dir;
  const auto logs = dir.path() + "/logs/sprint";
  captured_logger sprintrt_logger{""};
  auto opts = chatty_child({child_output_mode::file, logs});
  auto first = run_child(opts);
  auto second = run_child(opts);
  REQUIRE(process::flush_output_files(std::chrono::seconds{5}));
  // Both children of the worker, one after the other, unchanged.
  CHECK(read_file(logs + "/pool-0-worker-1.log") == std::string{said} + said);
  check_quoted_in_errors(first);
  check_quoted_in_errors(second);
  for (const auto& line : sprintrt_logger.worker_lines())
    CHECK(line.rfind("info", 0) == std::string::npos);
  CHECK(test::child_processes().empty());
}

TEST_CASE("childOutput file: a directory that cannot be made fails the start, naming it") {
  test::temp_dir dir;
  const auto plain = dir.path() + "/plain";
  std::ofstream{plain} << "a file, not a directory";
  auto down = run_child(chatty_child({child_output_mode::file, plain + "/logs"}));
  REQUIRE(down);
  CHECK(down->pid == -1);
  CHECK(down->cause == errc::spawn_failed);
  CHECK_THAT(error_message(down->cause),
             Catch::StartsWith("childOutput: cannot create the directory '" + plain + "/logs'"));
}

TEST_CASE("childOutput inherit: the child writes to the trainer's stdout and stderr") {
  test::temp_dir dir;
  const auto out = dir.path() + "/stdout", err = dir.path() + "/stderr";
  // A trainer of its own, whose fds 1 and 2 are the two files.
  const pid_t trainer = ::fork();
  REQUIRE(trainer >= 0);
  if (trainer == 0) {
    std::FILE* out_file = std::freopen(out.c_str(), "w", stdout);
    std::FILE* err_file = std::freopen(err.c_str(), "w", stderr);
    if (out_file == nullptr || err_file == nullptr)
      ::_exit(10);
    spdlog::set_level(spdlog::level::off);
    auto down = run_child(chatty_child({child_output_mode::inherit, ""}));
    const bool as_expected =
        down && down->exit_code() == 3 && down->output == process::output_tail::inherited_note &&
        describe_down(*down).find(process::output_tail::inherited_note) != std::string::npos;
    ::_exit(as_expected ? 0 : 11);
  }
  int status = 0;
  REQUIRE(::waitpid(trainer, &status, 0) == trainer);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_file(out) == "out: RASR says hi\n");
  CHECK(read_file(err) == "err: RASR says hi\n");
}
