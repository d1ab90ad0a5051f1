// A pool recovering from simulated workers that die on purpose: a death
// limit shared by every worker of a source (one recovery, not a pool that
// keeps failing), and pool stats that keep what a replaced worker answered
// and count its replacement as a restart.

#include "sprintrt/sim_worker.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 5;

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"rec/a", {1, 2}}, {"rec/b", {3}}}};
}

/// `count` segments "rec/a" of 4 frames: equal lengths, so that LPT gives
/// each of two workers every other one.
batch equal_batch(size_t count, uint64_t seed) {
  return test::random_batch(std::vector<std::string>(count, "rec/a"),
                            std::vector<int64_t>(count, 4), 4, dim, seed);
}

/// The sums over a pool's worker entries.
struct worker_totals {
  uint64_t served = 0;
  uint64_t failed = 0;
  uint64_t restarts = 0;
};

worker_totals totals(const pool_stats& stats) {
  worker_totals sum;
  for (const auto& w : stats.workers) {
    sum.served += w.requests_served;
    sum.failed += w.requests_failed;
    sum.restarts += w.restarts;
  }
  return sum;
}

/// A single request for segment `tag` (4 frames).
segment_job job_of(const std::string& tag) {
  segment_job job{tag, matrix_slice::dense(4, dim), matrix_slice::dense(4, dim)};
  criterion::fill_random_log_posteriors(job.log_posteriors.row(0), 4, dim, 3);
  return job;
}

} // namespace

TEST_CASE("max_deaths 1: one worker dies once, its replacement serves, and the stats show it") {
  auto fx = make_corpus();
  auto opts = fx.options("--*.topology=ctc", 2);
  sprint_runtime rt;
  auto expected = pool_client{rt, test::sim_corpus::pool(rt, opts)}.compute(equal_batch(8, 4));
  REQUIRE(expected);
  sim_worker_behavior behavior;
  behavior.die_at_request = 3; // both workers get 4 segments: each reaches its 3rd
  behavior.max_deaths = 1;
  pool_client client{rt, test::sim_corpus::pool(rt, opts, behavior)};
  auto result = client.compute(equal_batch(8, 4));
  REQUIRE(result);
  CHECK(result->loss == expected->loss);
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->segments == 8);
  CHECK(stats->failed_segments == 0);
  REQUIRE(stats->workers.size() == 2);
  auto sum = totals(*stats);
  // The dead worker's 2 answers are kept in its slot beside its
  // replacement's: every segment was answered once.
  CHECK(sum.served == 8);
  CHECK(sum.failed == 0);
  CHECK(sum.restarts == 1);
  // Exactly one slot replaced its worker, once; each slot answered its 4
  // segments (the dead worker's 2 and its replacement's 2 in one of them).
  CHECK(stats->workers[0].restarts + stats->workers[1].restarts == 1);
  for (const auto& w : stats->workers) {
    CHECK(w.requests_served == 4);
    CHECK(w.requests_failed == 0);
  }
  // Without a limit every replacement dies at its 3rd request too; the
  // batch still succeeds through resends, but with more replacements.
  behavior.max_deaths = 0;
  pool_client unlimited{rt, test::sim_corpus::pool(rt, opts, behavior)};
  REQUIRE(unlimited.compute(equal_batch(8, 4)));
  auto unlimited_stats = unlimited.stats();
  REQUIRE(unlimited_stats);
  for (const auto& w : unlimited_stats->workers) {
    CHECK(w.restarts == 1);
    CHECK(w.requests_served == 4);
  }
}

TEST_CASE("the death limit is shared by every worker the source makes, on any thread") {
  auto fx = make_corpus();
  auto opts = fx.options("--*.topology=ctc");
  sim_worker_behavior behavior;
  behavior.die_at_request = 1;
  behavior.max_deaths = 2;
  auto source = sim_worker_source(opts, behavior);
  REQUIRE(source);
  sprint_runtime rt;
  caf::scoped_actor self{rt.system()};
  // Six workers of one source, each asked once, all at the same time.
  std::vector<sprint_worker_actor> workers;
  for (size_t slot = 0; slot < 6; ++slot)
    workers.push_back(source->make(rt.system(), slot, "sim worker " + std::to_string(slot)));
  std::vector<segment_job> jobs;
  using handle =
      decltype(self->request(workers[0], caf::infinite, compute_atom::value, job_of("rec/a")));
  std::vector<handle> asked;
  for (auto& worker : workers) {
    jobs.push_back(job_of("rec/a"));
    asked.push_back(self->request(worker, caf::infinite, compute_atom::value, jobs.back()));
  }
  size_t served = 0;
  size_t died = 0;
  for (auto& h : asked)
    h.receive([&](double) { ++served; },
              [&](caf::error& err) {
                CHECK(err == caf::sec::request_receiver_down);
                ++died;
              });
  CHECK(died == 2);
  CHECK(served == 4);
  for (auto& worker : workers)
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

TEST_CASE("a slot's stats keep its replaced worker's served and failed requests") {
  auto fx = make_corpus();
  sim_worker_behavior behavior;
  behavior.fail_segment = "rec/b";
  behavior.die_at_request = 3;
  behavior.max_deaths = 1;
  sprint_runtime rt;
  pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"), behavior)};
  // One worker, one request at a time: failed, served, then the 3rd kills
  // it and is resent to its replacement, which serves it.
  auto failed = client.compute_segment(job_of("rec/b"));
  REQUIRE_FALSE(failed);
  CHECK(failed.error() == errc::child_failed);
  REQUIRE(client.compute_segment(job_of("rec/a")));
  REQUIRE(client.compute_segment(job_of("rec/a")));
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->segments == 2);
  CHECK(stats->failed_segments == 1);
  REQUIRE(stats->workers.size() == 1);
  CHECK(stats->workers[0].requests_served == 2);
  CHECK(stats->workers[0].requests_failed == 1);
  CHECK(stats->workers[0].restarts == 1);
}
