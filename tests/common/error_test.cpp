#include "sprintrt/error.hpp"

#include <catch2/catch.hpp>

#include <caf/atom.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>

#include <set>
#include <string>

using sprintrt::errc;

TEST_CASE("errors carry their code and message and compare by code") {
  auto err = sprintrt::make_error(errc::truncated, "BINBYTES needs 10 bytes at offset 4, 2 left");
  CHECK(err == errc::truncated);
  CHECK(err != errc::protocol_error);
  CHECK(err.category() == sprintrt::error_category);
  CHECK(sprintrt::error_message(err) == "BINBYTES needs 10 bytes at offset 4, 2 left");
  CHECK(sprintrt::render(err) == "truncated: BINBYTES needs 10 bytes at offset 4, 2 left");
}

TEST_CASE("render names the code of message-less errors and falls back to CAF for others") {
  CHECK(sprintrt::render(sprintrt::make_error(errc::timeout)) == "timeout");
  CHECK(sprintrt::render(caf::error{}) == "none");
  CHECK(sprintrt::render(caf::make_error(caf::sec::request_timeout)).find("request_timeout") !=
        std::string::npos);
  CHECK(sprintrt::error_message(caf::make_error(caf::sec::request_timeout)).empty());
}

TEST_CASE("every code has a distinct name") {
  std::set<std::string> names;
  for (int code = static_cast<int>(errc::protocol_error);
       code <= static_cast<int>(errc::worker_unavailable); ++code)
    names.insert(sprintrt::to_string(static_cast<errc>(code)));
  CHECK(names.size() == static_cast<size_t>(errc::worker_unavailable));
  CHECK(names.count("unknown_error") == 0);
}

TEST_CASE("with_context prefixes the message and keeps the code") {
  auto err = sprintrt::make_error(errc::child_exception, "KeyError: 'x'");
  auto wrapped = sprintrt::with_context("worker 2: segment 'x'", err);
  CHECK(wrapped == errc::child_exception);
  CHECK(sprintrt::error_message(wrapped) == "worker 2: segment 'x': KeyError: 'x'");
  CHECK(sprintrt::error_message(
            sprintrt::with_context("ctx", sprintrt::make_error(errc::timeout))) == "ctx");
  auto foreign = caf::make_error(caf::sec::request_timeout);
  CHECK(sprintrt::with_context("ctx", foreign) == foreign);
  CHECK_FALSE(sprintrt::with_context("ctx", caf::error{}));
}

namespace {

/// A child's failure as a worker labelled `worker` meets it.
caf::error child_failure(const std::string& worker, int32_t pid, std::string tail) {
  sprintrt::failure what;
  what.worker = worker;
  what.inner = "get_loss_and_error_signal of segment 'a'";
  what.cause = "no reply within 300 ms (replyTimeout)";
  what.child = {pid, "was killed by signal 9 (Killed)", std::move(tail)};
  return sprintrt::make_error(errc::timeout, std::move(what));
}

} // namespace

TEST_CASE("a failure's fields are joined into its text only when it is read") {
  auto err = child_failure("pool 0 worker 3", 42, "line 1\nline 2");
  CHECK(err == errc::timeout);
  CHECK(sprintrt::render(err) ==
        "timeout: pool 0 worker 3: get_loss_and_error_signal of segment 'a': no reply within "
        "300 ms (replyTimeout); Sprint child pid 42 was killed by signal 9 (Killed); its output "
        "ended with:\nline 1\nline 2");
  auto fields = sprintrt::failure_of(err);
  CHECK(fields.worker == "pool 0 worker 3");
  CHECK(fields.child.pid == 42);
  CHECK(fields.child.output_tail == "line 1\nline 2");
  // A child never started has no pid; one without output no tail.
  sprintrt::failure never;
  never.cause = "sprintExecPath 'x' does not exist";
  never.child.ending = "was never started";
  CHECK(sprintrt::to_string(never) ==
        "sprintExecPath 'x' does not exist; Sprint child was never started");
  // A plain message is the cause.
  CHECK(sprintrt::failure_of(sprintrt::make_error(errc::io_error, "disk full")).cause ==
        "disk full");
  CHECK(sprintrt::failure_of(caf::make_error(caf::sec::request_timeout)).cause.empty());
}

TEST_CASE("failures have the same cause whatever worker, pid or output tail they have") {
  auto a = sprintrt::failure_of(child_failure("pool 0 worker 3", 42, "pid 42 says hello"));
  auto b = sprintrt::failure_of(child_failure("pool 0 worker 1", 77, "pid 77 says hello"));
  CHECK(sprintrt::same_cause(a, b));
  b.child.ending = "exited with status 2";
  CHECK_FALSE(sprintrt::same_cause(a, b));
  auto c = sprintrt::failure_of(child_failure("pool 0 worker 1", 77, ""));
  c.inner = "get_loss_and_error_signal of segment 'b'";
  CHECK_FALSE(sprintrt::same_cause(a, c));
  // Met in different pools, they are told apart.
  auto d = sprintrt::failure_of(child_failure("pool 1 worker 3", 42, ""));
  a.pool = "pool 0";
  d.pool = "pool 1";
  CHECK_FALSE(sprintrt::same_cause(a, d));
}

TEST_CASE(
    "the first pool that sees a worker's failure is its worker's pool, not part of its text") {
  auto met = child_failure("pool 0 worker 3", 42, "");
  auto seen = sprintrt::in_pool("pool 0", met);
  CHECK(sprintrt::failure_of(seen).pool == "pool 0");
  CHECK(sprintrt::error_message(seen) == sprintrt::error_message(met));
  // Across a remote pool: the far pool saw it first.
  auto near = sprintrt::in_pool("pool 7", sprintrt::with_context("127.0.0.1:7000", seen));
  CHECK(sprintrt::failure_of(near).pool == "pool 0");
  CHECK(sprintrt::failure_of(near).worker == "pool 0 worker 3");
  // A failure no worker met has no worker's pool.
  auto own = sprintrt::make_error(errc::worker_unavailable, "no worker can take it");
  CHECK(sprintrt::failure_of(sprintrt::in_pool("pool 0", own)).pool.empty());
  // Another worker that meets it again is of no pool yet.
  CHECK(sprintrt::failure_of(sprintrt::with_worker("pool 7 worker 0", "", near)).pool.empty());
}

TEST_CASE("error_message reads a one-string context of any category") {
  caf::error theirs{uint8_t{1}, caf::atom("theirs"), caf::make_message(std::string{"their text"})};
  CHECK(sprintrt::error_message(theirs) == "their text");
}

TEST_CASE("context goes in front of the worker once a worker met a failure") {
  auto met = child_failure("pool 0 worker 3", 42, "");
  auto outer = sprintrt::with_context("127.0.0.1:7000", met);
  CHECK(sprintrt::failure_of(outer).worker == "pool 0 worker 3");
  CHECK(sprintrt::failure_of(outer).outer == "127.0.0.1:7000");
  CHECK(sprintrt::error_message(outer).rfind("127.0.0.1:7000: pool 0 worker 3: get_loss", 0) == 0);
  // Met again by another worker (the near end of a remote pool): the first
  // worker becomes context, the pid stays a field.
  auto again = sprintrt::with_worker("pool 1 worker 0", "", outer);
  auto fields = sprintrt::failure_of(again);
  CHECK(fields.worker == "pool 1 worker 0");
  CHECK(fields.inner ==
        "127.0.0.1:7000: pool 0 worker 3: get_loss_and_error_signal of segment 'a'");
  CHECK(fields.child.pid == 42);
  CHECK(sprintrt::error_message(again) == "pool 1 worker 0: " + sprintrt::error_message(outer));
  // No worker: the context alone.
  auto unnamed = sprintrt::with_worker("", "127.0.0.1:7000", met);
  CHECK(sprintrt::failure_of(unnamed).worker.empty());
  CHECK(sprintrt::error_message(unnamed) == sprintrt::error_message(outer));
  // Other categories are not sprintrt's to change.
  auto theirs = caf::make_error(caf::sec::request_receiver_down);
  CHECK(sprintrt::with_worker("pool 0 worker 1", "x", theirs) == theirs);
}
