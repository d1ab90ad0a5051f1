#include "sprintrt/error.hpp"

#include <catch2/catch.hpp>

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
