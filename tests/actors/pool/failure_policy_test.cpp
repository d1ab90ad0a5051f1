#include "actors/pool/failure_policy.hpp"

#include <catch2/catch.hpp>

#include <string>

#include <caf/sec.hpp>

#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

const retry_limits limits{3, 2};

const caf::error gone = caf::sec::request_receiver_down;

/// The verdict on `err` after `counts` retries, as "reroute", "resend",
/// "fail" or "fail: kept terminating".
std::string verdict_on(const caf::error& err, retry_counts& counts,
                       const retry_limits& allowed = limits) {
  auto verdict = decide_after_failure(err, counts, allowed);
  switch (verdict.action) {
  case after_failure::reroute:
    return verdict.kept_terminating ? "reroute?" : "reroute";
  case after_failure::resend:
    return verdict.kept_terminating ? "resend?" : "resend";
  case after_failure::fail:
    return verdict.kept_terminating ? "fail: kept terminating" : "fail";
  }
  return "?";
}

} // namespace

TEST_CASE("an unavailable worker's segment is rerouted while the reroute limit allows") {
  retry_counts counts;
  auto unavailable = make_error(errc::worker_unavailable, "host:1: connection refused");
  for (size_t i = 0; i < 3; ++i)
    CHECK(verdict_on(unavailable, counts) == "reroute");
  CHECK(counts.reroutes == 3);
  CHECK(counts.resends == 0);
  // Then it fails with the worker's error, and nothing more is counted.
  CHECK(verdict_on(unavailable, counts) == "fail");
  CHECK(counts.reroutes == 3);
}

TEST_CASE("a terminated worker's segment is resent while the source allows, then fails as such") {
  retry_counts counts;
  CHECK(verdict_on(gone, counts) == "resend");
  CHECK(verdict_on(gone, counts) == "resend");
  CHECK(counts.resends == 2);
  CHECK(verdict_on(gone, counts) == "fail: kept terminating");
  CHECK(counts.resends == 2);
  CHECK(counts.reroutes == 0);
}

TEST_CASE("reroutes and resends are counted apart") {
  retry_counts counts;
  auto unavailable = make_error(errc::worker_unavailable, "down");
  CHECK(verdict_on(gone, counts) == "resend");
  CHECK(verdict_on(unavailable, counts) == "reroute");
  CHECK(verdict_on(gone, counts) == "resend");
  CHECK(counts.resends == 2);
  CHECK(counts.reroutes == 1);
  CHECK(verdict_on(unavailable, counts) == "reroute");
}

TEST_CASE("any other error fails the segment with it at once") {
  for (auto err : {make_error(errc::child_exception, "KeyError"),
                   make_error(errc::child_failed, "the child kept crashing"),
                   make_error(errc::timeout, "no reply"), make_error(errc::cancelled, "stopped")}) {
    retry_counts counts;
    CHECK(verdict_on(err, counts) == "fail");
    CHECK(counts.resends == 0);
    CHECK(counts.reroutes == 0);
  }
}

TEST_CASE("without retries allowed, the first failure decides") {
  retry_counts counts;
  const retry_limits none{0, 0};
  CHECK(verdict_on(make_error(errc::worker_unavailable, "down"), counts, none) == "fail");
  CHECK(verdict_on(gone, counts, none) == "fail: kept terminating");
}
