#include "actors/pool/failure_policy.hpp"

#include <catch2/catch.hpp>

#include <caf/sec.hpp>

#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

const retry_limits limits{3, 2};

} // namespace

TEST_CASE("an unavailable worker's segment is rerouted while the reroute limit allows") {
  retry_counts counts;
  auto unavailable = make_error(errc::worker_unavailable, "host:1: connection refused");
  for (size_t i = 0; i < 3; ++i) {
    auto verdict = decide_after_failure(unavailable, counts, limits);
    CHECK(verdict.action == after_failure::reroute);
    CHECK_FALSE(verdict.kept_terminating);
  }
  CHECK(counts.reroutes == 3);
  CHECK(counts.resends == 0);
  // Then it fails with the worker's error, and nothing more is counted.
  auto verdict = decide_after_failure(unavailable, counts, limits);
  CHECK(verdict.action == after_failure::fail);
  CHECK_FALSE(verdict.kept_terminating);
  CHECK(counts.reroutes == 3);
}

TEST_CASE("a terminated worker's segment is resent while the source allows, then fails as such") {
  retry_counts counts;
  caf::error gone = caf::sec::request_receiver_down;
  CHECK(decide_after_failure(gone, counts, limits).action == after_failure::resend);
  CHECK(decide_after_failure(gone, counts, limits).action == after_failure::resend);
  CHECK(counts.resends == 2);
  auto verdict = decide_after_failure(gone, counts, limits);
  CHECK(verdict.action == after_failure::fail);
  CHECK(verdict.kept_terminating);
  CHECK(counts.resends == 2);
  CHECK(counts.reroutes == 0);
}

TEST_CASE("reroutes and resends are counted apart") {
  retry_counts counts;
  caf::error gone = caf::sec::request_receiver_down;
  auto unavailable = make_error(errc::worker_unavailable, "down");
  CHECK(decide_after_failure(gone, counts, limits).action == after_failure::resend);
  CHECK(decide_after_failure(unavailable, counts, limits).action == after_failure::reroute);
  CHECK(decide_after_failure(gone, counts, limits).action == after_failure::resend);
  CHECK(counts.resends == 2);
  CHECK(counts.reroutes == 1);
  CHECK(decide_after_failure(unavailable, counts, limits).action == after_failure::reroute);
}

TEST_CASE("any other error fails the segment with it at once") {
  for (auto err : {make_error(errc::child_exception, "KeyError"),
                   make_error(errc::child_failed, "the child kept crashing"),
                   make_error(errc::timeout, "no reply"), make_error(errc::cancelled, "stopped")}) {
    retry_counts counts;
    auto verdict = decide_after_failure(err, counts, limits);
    CHECK(verdict.action == after_failure::fail);
    CHECK_FALSE(verdict.kept_terminating);
    CHECK(counts.resends == 0);
    CHECK(counts.reroutes == 0);
  }
}

TEST_CASE("without retries allowed, the first failure decides") {
  retry_counts counts;
  const retry_limits none{0, 0};
  CHECK(decide_after_failure(make_error(errc::worker_unavailable, "down"), counts, none).action ==
        after_failure::fail);
  auto verdict = decide_after_failure(caf::sec::request_receiver_down, counts, none);
  CHECK(verdict.action == after_failure::fail);
  CHECK(verdict.kept_terminating);
}
