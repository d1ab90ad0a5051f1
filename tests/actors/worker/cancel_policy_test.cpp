#include "actors/worker/cancel_policy.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

/// A child that takes 100 ms per request and 1 s to start.
const child_timing timing{100ms, 1s};

/// The current request, computed for `computing`, and `queued` behind it.
unwanted_work unwanted(bool current, clock_type::duration computing, size_t queued) {
  return {current, computing, queued};
}

} // namespace

TEST_CASE("a child's mean time per request divides its busy time by its answers") {
  CHECK(mean_request_time(0, 5'000'000) == clock_type::duration::zero());
  CHECK(mean_request_time(4, 400'000'000) == 100ms);
  CHECK(mean_request_time(3, 10) == 3ns);
}

TEST_CASE("keep and kill decide alone, whatever the costs") {
  const auto huge = unwanted(true, 1h, 100);
  CHECK(keeps_child(cancel_policy::keep, timing, huge));
  CHECK_FALSE(keeps_child(cancel_policy::kill, timing, unwanted(true, 0ms, 0)));
}

TEST_CASE("auto keeps a child whose unwanted work takes less than a new child's start-up") {
  // The current one, 30 ms in, is expected to need 70 ms more.
  CHECK(keeps_child(cancel_policy::automatic, timing, unwanted(true, 30ms, 0)));
  // 70 ms + 9 x 100 ms = 970 ms < 1 s; one more is 1070 ms.
  CHECK(keeps_child(cancel_policy::automatic, timing, unwanted(true, 30ms, 9)));
  CHECK_FALSE(keeps_child(cancel_policy::automatic, timing, unwanted(true, 30ms, 10)));
  // Only queued ones: 10 x 100 ms is not less than 1 s.
  CHECK(keeps_child(cancel_policy::automatic, timing, unwanted(false, 30ms, 9)));
  CHECK_FALSE(keeps_child(cancel_policy::automatic, timing, unwanted(false, 30ms, 10)));
}

TEST_CASE("auto expects a request past the mean to take as long again") {
  // 600 ms in, past the 100 ms mean: 600 ms more, then 4 x 100 ms: 1 s.
  CHECK(keeps_child(cancel_policy::automatic, timing, unwanted(true, 600ms, 3)));
  CHECK_FALSE(keeps_child(cancel_policy::automatic, timing, unwanted(true, 600ms, 4)));
  CHECK_FALSE(keeps_child(cancel_policy::automatic, timing, unwanted(true, 1s, 0)));
}

TEST_CASE("before its first answer a child's requests are expected to cost nothing") {
  const child_timing fresh{clock_type::duration::zero(), 1s};
  CHECK(keeps_child(cancel_policy::automatic, fresh, unwanted(true, 0ms, 3)));
  CHECK(keeps_child(cancel_policy::automatic, fresh, unwanted(true, 999ms, 3)));
  CHECK_FALSE(keeps_child(cancel_policy::automatic, fresh, unwanted(true, 1s, 0)));
  // A start-up of zero (not measured) never keeps it.
  CHECK_FALSE(keeps_child(cancel_policy::automatic, child_timing{}, unwanted(false, 0ms, 0)));
}

TEST_CASE("a kept child is given up on a start-up past its mean, under auto only") {
  const clock_type::time_point sent{5s};
  auto point = give_up_point(cancel_policy::automatic, timing, sent);
  REQUIRE(point);
  CHECK(*point == sent + 1100ms);
  CHECK_FALSE(give_up_point(cancel_policy::keep, timing, sent));
  CHECK_FALSE(give_up_point(cancel_policy::kill, timing, sent));
}
