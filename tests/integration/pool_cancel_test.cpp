// Stopping a blocking call through its stop token, against real sprint-sim
// children: a slow batch, a batch on a hung child, automata and a single
// segment return `cancelled` soon after the stop; the children that were
// computing them finish and are kept (or, with onCancel "kill", are replaced;
// a hung one is killed by its replyTimeout); the next call on the same pool
// is exact, and nothing is left behind.

#include "sprintrt/pool_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/integration/seqtrain_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using test::check_nothing_left;
using test::sim_options;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr size_t dim = 6;

/// How soon a stopped call must return: the poll interval and a few
/// messages, with a margin for sanitizer builds, and well short of the
/// segment delays below.
constexpr std::chrono::milliseconds answer_bound{500};

/// Runs `call(token)` on another thread, requests the stop `after` later,
/// and returns the call's result with the time from the stop to its return.
template <class Call>
auto stop_after(std::chrono::milliseconds after, Call call) {
  stop_source source;
  decltype(call(source.get_token())) result = make_error(errc::timeout, "not returned");
  clock_type::time_point returned;
  std::thread caller{[&] {
    result = call(source.get_token());
    returned = clock_type::now();
  }};
  std::this_thread::sleep_for(after);
  auto stopped = clock_type::now();
  source.request_stop();
  caller.join();
  return std::make_pair(std::move(result), returned - stopped);
}

/// Whether two results are equal bit for bit.
bool same_bits(const batch_result& a, const batch_result& b) {
  return a.loss == b.loss && a.error_signal.shape() == b.error_signal.shape() &&
         std::memcmp(a.error_signal.data(), b.error_signal.data(),
                     a.error_signal.size() * sizeof(float)) == 0;
}

/// The restarts of all of a pool's workers.
uint64_t restarts(const pool_client& client) {
  auto stats = client.stats();
  REQUIRE(stats);
  uint64_t sum = 0;
  for (const auto& w : stats->workers)
    sum += w.restarts;
  return sum;
}

/// Stops a batch of all `segments` through `client` `after` into it and
/// checks that it answered `cancelled` at once (within `answer_bound`, not
/// when the segments being computed end), and that a small batch computed
/// before and after it is the same bit for bit. `between()` runs after the
/// stop, before the small batch's second run.
template <class Between>
void check_stopped_then_exact(const pool_client& client,
                              const std::vector<test::test_segment>& segments,
                              std::chrono::milliseconds after, Between between) {
  auto small = [&] { return test::make_batch(segments, 0, 2, dim, 4, 3, 11); };
  auto want = client.compute(small());
  REQUIRE(want);
  auto [result, latency] = stop_after(after, [&](stop_token stop) {
    return client.compute(test::make_batch(segments, 0, segments.size(), dim, 4, 5, 7), stop);
  });
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::cancelled);
  CHECK(latency < answer_bound);
  between();
  auto again = client.compute(small());
  REQUIRE(again);
  CHECK(same_bits(*want, *again));
}

} // namespace

/// The pids of a pool's children.
std::vector<int32_t> child_pids(const pool_client& client) {
  auto stats = client.stats();
  REQUIRE(stats);
  std::vector<int32_t> pids;
  for (const auto& w : stats->workers)
    pids.push_back(w.pid);
  return pids;
}

TEST_CASE("a stopped batch returns cancelled at once; its children finish and are kept") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 16, dim);
    // 16 segments of 100 ms over two children: 0.8 s uninterrupted.
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=100"});
    opts.num_instances = 2;
    opts.on_cancel = cancel_policy::keep;
    sprint_runtime rt;
    pool_client client{rt, opts};
    REQUIRE(client.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 1)));
    const auto pids = child_pids(client);
    // 150 ms into the batch: both children are computing one of its
    // segments, with more written behind it.
    check_stopped_then_exact(client, segments, std::chrono::milliseconds{150}, [] {});
    CHECK(restarts(client) == 0);
    CHECK(child_pids(client) == pids);
    auto stats = client.stats();
    REQUIRE(stats);
    for (const auto& w : stats->workers)
      CHECK(w.requests_failed == 0);
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("onCancel auto keeps children that start slowly and kills those busy for long") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 16, dim);
    // Children that take 400 ms to start and 20 ms per segment: finishing
    // the four segments each holds is quicker than a new child.
    auto slow_start = sim_options(test::corpus_path(dir), {"delay-ms=20", "init-delay-ms=400"});
    slow_start.num_instances = 2;
    // Children that start in milliseconds, 1 s per segment: a new child is
    // quicker.
    auto long_segments = sim_options(test::corpus_path(dir), {"delay-ms=1000"});
    long_segments.num_instances = 2;
    for (const auto* opts : {&slow_start, &long_segments}) {
      const bool keeps = opts == &slow_start;
      INFO((keeps ? "slow start" : "long segments"));
      sprint_runtime rt;
      pool_client client{rt, *opts};
      REQUIRE(client.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 1)));
      const auto pids = child_pids(client);
      check_stopped_then_exact(client, segments, std::chrono::milliseconds{keeps ? 50 : 300},
                               [] {});
      // A killed child is replaced only when next needed, so count the
      // replacements by pid: each worker's child is the same, or none is.
      const auto now = child_pids(client);
      REQUIRE(now.size() == pids.size());
      for (size_t w = 0; w < pids.size(); ++w)
        CHECK((now[w] == pids[w]) == keeps);
      if (keeps)
        CHECK(restarts(client) == 0);
      rt.shutdown();
    }
  }
  check_nothing_left(fds);
}

TEST_CASE("onCancel auto gives up on a kept child that computes for nobody too long") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 6, dim);
    // One child starting in 300 ms, 20 ms per segment, that hangs on its
    // fifth request. Stopped 60 ms into a batch whose first segment hangs,
    // it is kept (60 + 20 ms of work left, against 300 ms), then killed
    // when that segment has run the child's mean plus a start-up: long
    // before its replyTimeout (20 s).
    auto opts = sim_options(test::corpus_path(dir),
                            {"delay-ms=20", "init-delay-ms=300", "fault=hang", "fault-after=4"});
    sprint_runtime rt;
    pool_client client{rt, opts};
    for (size_t first : {0, 2})
      REQUIRE(client.compute(test::make_batch(segments, first, 2, dim, 4, 3, 1)));
    const auto pid = child_pids(client);
    auto [result, latency] = stop_after(std::chrono::milliseconds{60}, [&](stop_token stop) {
      return client.compute(test::make_batch(segments, 4, 2, dim, 4, 3, 5), stop);
    });
    REQUIRE_FALSE(result);
    CHECK(result.error() == errc::cancelled);
    CHECK(restarts(client) == 0); // kept, for now
    CHECK(child_pids(client) == pid);
    const auto stopped = clock_type::now();
    auto again = client.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 1));
    REQUIRE(again);
    CHECK(clock_type::now() - stopped < std::chrono::seconds{5});
    CHECK(restarts(client) == 1);
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->workers.at(0).requests_failed == 0);
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("with onCancel kill a stopped batch's children are killed at once and replaced") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 16, dim);
    // 16 segments of 1 s over two children: 8 s uninterrupted.
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=1000"});
    opts.num_instances = 2;
    opts.on_cancel = cancel_policy::kill;
    sprint_runtime rt;
    pool_client client{rt, opts};
    // 300 ms into the batch, 700 ms before its first segments end. Both
    // children were computing one of its segments: both are stopped, and
    // restarted only when next needed.
    check_stopped_then_exact(client, segments, std::chrono::milliseconds{300},
                             [&] { CHECK(restarts(client) == 0); });
    CHECK(restarts(client) == 2);
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("a stopped batch on in-process workers returns cancelled, and the next is exact") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 12, dim);
  auto opts = sim_options(test::corpus_path(dir));
  opts.num_instances = 2;
  sim_worker_behavior slow;
  slow.min_delay = slow.max_delay = std::chrono::milliseconds{1000};
  auto source = sim_worker_source(opts, slow);
  REQUIRE(source);
  sprint_runtime rt;
  pool_client client{rt, rt.pool(std::move(*source))};
  check_stopped_then_exact(client, segments, std::chrono::milliseconds{500}, [] {});
  // The workers dropped all of its 12 segments, the two they were serving
  // (500 ms into 1 s each) too: they served the two small batches only.
  auto stats = client.stats();
  REQUIRE(stats);
  uint64_t served = 0;
  for (const auto& w : stats->workers)
    served += w.requests_served;
  CHECK(served == 2 + 2);
  rt.shutdown();
}

TEST_CASE(
    "a batch on a hung child is stopped; its replyTimeout kills the child; the next is exact") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 4, dim);
    // One child that answers two requests and hangs on the third, kept when
    // the batch is stopped: the caller is answered at once, the child is
    // killed when it misses its replyTimeout, and the next batch waits for
    // that and the next child.
    auto opts = sim_options(test::corpus_path(dir), {"fault=hang", "fault-after=2"});
    opts.reply_timeout = std::chrono::seconds{1};
    opts.on_cancel = cancel_policy::keep;
    sprint_runtime rt;
    pool_client client{rt, opts};
    const auto sent = clock_type::now();
    auto [result, latency] = stop_after(std::chrono::milliseconds{500}, [&](stop_token stop) {
      return client.compute(test::make_batch(segments, 0, 4, dim, 4, 3, 5), stop);
    });
    REQUIRE_FALSE(result);
    CHECK(result.error() == errc::cancelled);
    CHECK(latency < answer_bound);
    // The next child answers two requests again: a batch of two is exact.
    auto again = client.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 5));
    REQUIRE(again);
    CHECK(clock_type::now() - sent >= opts.reply_timeout);
    CHECK(restarts(client) == 1);
    sprint_runtime reference_rt;
    pool_client reference{reference_rt, sim_options(test::corpus_path(dir))};
    auto want = reference.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 5));
    REQUIRE(want);
    CHECK(same_bits(*want, *again));
    reference_rt.shutdown();
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("stopped automata return cancelled, and the pool serves on") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 8, dim);
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=1000"});
    sprint_runtime rt;
    pool_client client{rt, opts};
    std::vector<std::string> tags;
    for (const auto& s : segments)
      tags.push_back(s.name);
    auto [automata, latency] = stop_after(std::chrono::milliseconds{300}, [&](stop_token stop) {
      return client.automata(tags, stop);
    });
    REQUIRE_FALSE(automata);
    CHECK(automata.error() == errc::cancelled);
    CHECK(latency < answer_bound);
    CHECK(client.automata({segments[1].name}));
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("a stopped single segment writes nothing into its output, then or later") {
  test::temp_dir dir;
  auto segments = test::write_corpus(dir, 2, dim);
  // An in-process worker computes the reply itself: it would write it.
  sim_worker_behavior slow;
  slow.min_delay = slow.max_delay = std::chrono::milliseconds{400};
  auto source = sim_worker_source(sim_options(test::corpus_path(dir)), slow);
  REQUIRE(source);
  sprint_runtime rt;
  pool_client client{rt, rt.pool(std::move(*source))};
  auto lp = test::random_log_posteriors(5, dim, 3);
  auto job = test::make_job(segments[0].name, lp, dim);
  auto output = job.error_signal;
  auto [loss, latency] = stop_after(std::chrono::milliseconds{100}, [&](stop_token stop) {
    return client.compute_segment(job, stop);
  });
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::cancelled);
  CHECK(latency < answer_bound);
  std::this_thread::sleep_for(std::chrono::milliseconds{600}); // past the reply's time
  for (size_t r = 0; r < output.rows; ++r)
    for (size_t c = 0; c < output.cols; ++c)
      REQUIRE(output.row(r)[c] == 0.0f);
  // Stopped before it starts: cancelled without waiting for the worker.
  stop_source already;
  already.request_stop();
  auto early =
      client.compute_segment(test::make_job(segments[1].name, lp, dim), already.get_token());
  REQUIRE_FALSE(early);
  CHECK(early.error() == errc::cancelled);
  rt.shutdown();
}

TEST_CASE("with onCancel kill, another caller's segments written behind a stopped one are resent") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 4, dim);
    // One child, 300 ms per segment: the other caller's two segments wait
    // in its pipe behind the stopped batch's two when it is killed.
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=300"});
    opts.on_cancel = cancel_policy::kill;
    sprint_runtime rt;
    pool_client client{rt, opts};
    auto other = [&] { return test::make_batch(segments, 2, 2, dim, 4, 3, 21); };
    auto want = client.compute(other());
    REQUIRE(want);
    caf::expected<batch_result> got = make_error(errc::timeout, "not returned");
    stop_source stop;
    std::thread stopped_caller{[&] {
      auto r = client.compute(test::make_batch(segments, 0, 2, dim, 4, 3, 5), stop.get_token());
      CHECK(r.error() == errc::cancelled);
    }};
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    std::thread other_caller{[&] { got = client.compute(other()); }};
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
    stop.request_stop();
    stopped_caller.join();
    other_caller.join();
    REQUIRE(got);
    CHECK(same_bits(*want, *got));
    auto stats = client.stats();
    REQUIRE(stats);
    CHECK(stats->workers.at(0).requests_failed == 0); // the resend was not charged
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("a stopped train request returns cancelled, and the same request is answered later") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 4, dim);
    auto opts = sim_options(test::corpus_path(dir), {"delay-ms=600"});
    sprint_runtime rt;
    auto pool = rt.pool(opts);
    seqtrain_client sched{rt, pool, {/*forward_seq_delay*/ 8}};
    REQUIRE_FALSE(sched.start_epoch(1));
    auto b = test::make_batch(segments, 0, 2, dim, 4, 1, 9);
    REQUIRE_FALSE(sched.forward(forward_sequences{{0, 1}, b}));
    seqtrain_batch layout{4, 2, {{0, 0, 0, 0, 4}, {1, 1, 0, 0, 4}}};
    auto [result, latency] = stop_after(std::chrono::milliseconds{200}, [&](stop_token stop) {
      return sched.train({layout}, stop);
    });
    REQUIRE_FALSE(result);
    CHECK(result.error() == errc::cancelled);
    CHECK(latency < answer_bound);
    auto answered = sched.train({layout});
    REQUIRE(answered);
    CHECK(answered->loss.size() == 2);
    REQUIRE(sched.finish_epoch());
    rt.shutdown();
  }
  check_nothing_left(fds);
}
