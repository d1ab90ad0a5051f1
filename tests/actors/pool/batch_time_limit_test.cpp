// A batch's time limit (`batch::time_limit`): the pool cancels the batch when
// it runs out and answers `timeout`; CAF's own request timeout only ends the
// caller's wait.

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>

#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"s0", {1, 2}}, {"s1", {3}}, {"s2", {2}}, {"s3", {1}}}};
}

/// The requests the pool's workers served.
uint64_t served(const pool_client& client) {
  auto stats = client.stats();
  REQUIRE(stats);
  uint64_t sum = 0;
  for (const auto& w : stats->workers)
    sum += w.requests_served;
  return sum;
}

} // namespace

TEST_CASE("a batch whose time limit runs out is cancelled and answered with timeout") {
  auto fx = make_corpus();
  sprint_runtime rt;
  sim_worker_behavior slow;
  slow.min_delay = slow.max_delay = 1s;
  const pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2), slow)};
  auto b = test::random_batch({"s0", "s1", "s2", "s3"}, {3, 2, 3, 2}, 3, 4, 5);
  b.time_limit = 200ms;
  const auto start = clock_type::now();
  auto result = client.compute(b);
  const auto waited = clock_type::now() - start;
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::timeout);
  CHECK(error_message(result.error()).find("time limit (200 ms) ran out") != std::string::npos);
  // Answered when the limit ran out, not when the segments (1 s each) end.
  CHECK(waited >= 200ms);
  CHECK(waited < 900ms);
  // Cancelled: the workers dropped the segments they held, so the next
  // batch is served at once, and exactly.
  std::this_thread::sleep_for(1200ms);
  CHECK(served(client) == 0);
  auto small = test::random_batch({"s0"}, {3}, 3, 4, 6);
  auto want = client.compute(small);
  REQUIRE(want);
  small.time_limit = 10s;
  auto again = client.compute(small);
  REQUIRE(again);
  CHECK(again->loss == want->loss);
}

TEST_CASE("a batch within its time limit is unaffected by it") {
  auto fx = make_corpus();
  sprint_runtime rt;
  const pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2))};
  auto b = test::random_batch({"s0", "s1"}, {3, 2}, 3, 4, 5);
  auto want = client.compute(b);
  REQUIRE(want);
  b.time_limit = 5s;
  auto got = client.compute(b);
  REQUIRE(got);
  CHECK(got->loss == want->loss);
}

TEST_CASE("CAF's request timeout only ends the caller's wait: the pool computes on") {
  auto fx = make_corpus();
  sprint_runtime rt;
  sim_worker_behavior slow;
  slow.min_delay = slow.max_delay = 300ms;
  auto pool = test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"), slow);
  caf::scoped_actor self{rt.system()};
  self->request(pool, 50ms, compute_atom::value, test::random_batch({"s0"}, {3}, 3, 4, 5))
      .receive([](batch_result&) { FAIL("answered before its segment's delay"); },
               [](caf::error& err) { CHECK(err == caf::sec::request_timeout); });
  std::this_thread::sleep_for(600ms);
  const pool_client client{rt, pool};
  CHECK(served(client) == 1);
}
