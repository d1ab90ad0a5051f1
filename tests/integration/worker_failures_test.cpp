// How a worker handles Sprint children that fail: missing executables, a
// child that exits at once or never answers init, crashes, hangs and garbage
// mid-way (restart, resend), a segment that keeps failing, and a shutdown with
// work in flight. Each test also checks that no child and no descriptor is
// left behind.

#include "actors/worker/sprint_worker.hpp"

#include <catch2/catch.hpp>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <sys/resource.h>

#include <optional>
#include <thread>

#include "process/child_reaper.hpp"
#include "protocol/messages.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using test::check_nothing_left;
using namespace std::chrono_literals;
using test::compute;
using test::make_job;
using test::random_log_posteriors;
using test::sim_options;
using test::stats_of;

namespace {

constexpr size_t dim = 5;

/// What a failure test gets: the worker, a scoped actor to talk to it, the
/// corpus segments and the corpus path.
struct worker_env {
  caf::scoped_actor& self;
  sprint_worker_actor worker;
  std::vector<test::test_segment> segments;
  std::string corpus;
};

/// Runs `body(env)` against a worker with sprint-sim `params` (options
/// changed by `tweak`), then checks that nothing was left behind.
template <class Body>
void with_worker(const std::vector<std::string>& params, Body body,
                 void (*tweak)(sprint_options&) = nullptr) {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 6, dim);
    auto opts = sim_options(test::corpus_path(dir), params);
    if (tweak)
      tweak(opts);
    test::test_runtime rt;
    caf::scoped_actor self{rt.system()};
    worker_env env{self, rt.spawn_worker(opts, "worker 7"), segments, test::corpus_path(dir)};
    body(env);
  }
  check_nothing_left(fds);
}

/// The peak resident set size of this process so far, in KiB.
long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

segment_job job_for(const test::test_segment& seg, uint64_t seed) {
  return make_job(seg.name, random_log_posteriors(8, dim, seed), dim);
}

/// Computes segment `i` (posteriors from `seed`) and checks that its loss
/// and error signal are exactly what the in-process criterion gives: a
/// resent request must not come back changed.
void compute_exact(worker_env& env, size_t i, uint64_t seed) {
  auto job = job_for(env.segments[i], seed);
  auto r = compute(env.self, env.worker, job);
  INFO(env.segments[i].name);
  REQUIRE(r);
  auto expected = test::reference_loss(env.corpus, env.segments[i].name,
                                       job.log_posteriors.storage->to_vector(), dim);
  CHECK(*r == expected.loss);
  CHECK(job.error_signal.storage->to_vector() == expected.error_signal);
}

/// Checks that the worker's current child `pid` is this process's only
/// child (no zombie of an earlier one) and that the process holds `fds`
/// descriptors, as many as while the first child ran: a restart closed
/// everything of the child before it.
void check_restart_left_nothing(pid_t pid, size_t fds) {
  auto children = test::child_processes();
  REQUIRE(children.size() == 1);
  CHECK(children[0].pid == pid);
  CHECK(children[0].state != 'Z');
  auto now = test::open_fds();
  INFO(test::describe_fds(now));
  CHECK(now.size() == fds);
}

/// Computes segments 0 and 1 exactly on a worker whose first child fails
/// its second request (which is resent to a new child), and checks after
/// the restart that the first child was reaped and its descriptors closed.
void compute_across_one_restart(worker_env& env) {
  compute_exact(env, 0, 1);
  const size_t fds_with_one_child = test::open_fds().size();
  const auto first_pid = stats_of(env.self, env.worker).pid;
  compute_exact(env, 1, 2);
  auto stats = stats_of(env.self, env.worker);
  CHECK(stats.restarts == 1);
  CHECK(stats.pid != first_pid);
  check_restart_left_nothing(stats.pid, fds_with_one_child);
}

} // namespace

TEST_CASE("a missing executable fails requests at once, naming the path") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    test::write_corpus(dir, 1, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.sprint_exec_path = dir.path() + "/no-such-sprint";
    test::test_runtime rt;
    auto worker = rt.spawn_worker(opts);
    caf::scoped_actor self{rt.system()};
    auto r =
        compute(self, worker, make_job("corpus/rec/seg-0", random_log_posteriors(3, dim, 1), dim));
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::child_failed);
    CHECK_THAT(render(r.error()), Catch::Contains("could not be started") &&
                                      Catch::Contains("no-such-sprint' does not exist"));
  }
  check_nothing_left(fds);
}

TEST_CASE("a child that exits at once fails requests with its exit status and output") {
  with_worker(
      {"fault=exit-at-start"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::child_failed);
        CHECK_THAT(render(r.error()), Catch::Contains("exited with status 2") &&
                                          Catch::Contains("its output ended with"));
      },
      [](sprint_options& opts) { opts.max_retries = 1; });
}

TEST_CASE("a child that never answers init times out and is killed") {
  with_worker(
      {"fault=no-init-reply"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::timeout);
        CHECK_THAT(render(r.error()),
                   Catch::Contains("no reply to init within 300 ms (initTimeout)") &&
                       Catch::Contains("killed by signal 9"));
      },
      [](sprint_options& opts) {
        opts.init_timeout = 300ms;
        opts.max_retries = 0;
      });
}

TEST_CASE("an init reply that arrives after the initTimeout kill makes nothing ready") {
  // Kill signal 0 keeps each killed child alive, so its init reply arrives
  // after the kill: the request must never go to such a child (it would be
  // answered there), and the start failures must count.
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 1, dim);
    auto opts = sim_options(test::corpus_path(dir));
    opts.init_timeout = 1ms; // no child starts that fast
    opts.max_retries = 1;
    test::test_runtime rt;
    test::kill_signal_override no_kills{rt.io(), 0};
    caf::scoped_actor self{rt.system()};
    auto worker = rt.spawn_worker(opts, "worker 7");
    // A bounded wait: a worker that kept restarting would never answer.
    caf::expected<double> r = 0.0;
    self->request(worker, 30s, compute_atom::value, job_for(segments[0], 1))
        .receive([&](double loss) { r = loss; }, [&](caf::error& err) { r = std::move(err); });
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timeout);
    CHECK_THAT(render(r.error()),
               Catch::Contains("worker 7: the Sprint child could not be started") &&
                   Catch::Contains("no reply to init within 1 ms (initTimeout)"));
    CHECK(stats_of(self, worker).requests_served == 0);
    // The children given up on exit once their pipes are closed (slowly
    // under the leak sanitizer); the reaper reaps them then.
    for (const auto& child : test::child_processes())
      CHECK(test::wait_until_reaped(child.pid, 20s));
  }
  check_nothing_left(fds);
}

TEST_CASE("a child speaking another protocol version is refused without retries") {
  with_worker({"fault=bad-version"}, [](worker_env& env) {
    auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
    REQUIRE_FALSE(r);
    CHECK_THAT(render(r.error()), Catch::Contains("protocol version 2, expected 1"));
    CHECK(stats_of(env.self, env.worker).restarts == 0);
  });
}

TEST_CASE("a crashing child is restarted and the request resent") {
  // Every child crashes on its third request: 6 requests need 2 restarts.
  with_worker({"fault=crash", "fault-after=2"}, [](worker_env& env) {
    compute_exact(env, 0, 0);
    const size_t fds_with_one_child = test::open_fds().size();
    for (size_t i = 1; i < env.segments.size(); ++i) {
      compute_exact(env, i, i);
      check_restart_left_nothing(stats_of(env.self, env.worker).pid, fds_with_one_child);
    }
    auto stats = stats_of(env.self, env.worker);
    CHECK(stats.restarts == 2);
    CHECK(stats.requests_served == 6);
    CHECK(stats.requests_failed == 0);
  });
}

TEST_CASE("a hanging child is killed after replyTimeout and the request resent") {
  // The first child hangs on its second request; its successor answers.
  with_worker(
      {"fault=hang", "fault-after=1"}, [](worker_env& env) { compute_across_one_restart(env); },
      [](sprint_options& opts) { opts.reply_timeout = 500ms; });
}

TEST_CASE("a reply timeout resends the request even if the killed child never exits") {
  // Kill signal 0: the hung child survives its SIGKILL, like one stuck in
  // the kernel. The worker gives up on it kill_wait later and goes on.
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    auto opts = sim_options(test::corpus_path(dir), {"fault=hang", "fault-after=1"});
    opts.reply_timeout = 300ms;
    test::test_runtime rt;
    test::kill_signal_override no_kills{rt.io(), 0};
    caf::scoped_actor self{rt.system()};
    worker_env env{self, rt.spawn_worker(opts, "worker 7"), segments, test::corpus_path(dir)};
    compute_exact(env, 0, 1);
    auto stuck_pid = stats_of(self, env.worker).pid;
    auto began = std::chrono::steady_clock::now();
    compute_exact(env, 1, 2);
    auto took = std::chrono::steady_clock::now() - began;
    CHECK(took >= opts.reply_timeout + process::kill_wait);
    auto stats = stats_of(self, env.worker);
    CHECK(stats.restarts == 1);
    CHECK(stats.requests_served == 2);
    CHECK(stats.pid != stuck_pid);
    // The first child still runs, and is reaped once it exits.
    test::check_reaped_once_killed(stuck_pid);
  }
  check_nothing_left(fds);
}

TEST_CASE(
    "a job whose caller closed its gate is cancelled; the output is untouched, the child kept") {
  with_worker({"delay-ms=300"}, [](worker_env& env) {
    auto job = job_for(env.segments[0], 1);
    job.gate = std::make_shared<output_gate>();
    auto pending = env.self->request(env.worker, caf::infinite, compute_atom::value, job);
    std::this_thread::sleep_for(100ms);
    job.gate->close(); // the caller stops waiting; the reply is on its way
    caf::error err;
    pending.receive([](double) {}, [&](caf::error& e) { err = e; });
    CHECK(err == errc::cancelled);
    CHECK_THAT(render(err), Catch::Contains("segment 'corpus/rec/seg-0'") &&
                                Catch::Contains("the error signal was not written"));
    CHECK(job.error_signal.storage->to_vector() ==
          std::vector<float>(job.error_signal.storage->size(), 0.0f));
    // A valid reply that nobody wanted breaks nothing: no restart.
    compute_exact(env, 1, 2);
    auto stats = stats_of(env.self, env.worker);
    CHECK(stats.restarts == 0);
    CHECK(stats.requests_failed == 1);
    CHECK(stats.requests_served == 1);
  });
}

TEST_CASE("stopping a worker whose child is being killed but never exits returns") {
  // The replyTimeout kill has not taken (kill signal 0) when the stop
  // comes: the stop must not restart the wait for the child, it returns
  // kill_wait after the kill at the latest.
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 1, dim);
    auto opts = sim_options(test::corpus_path(dir), {"fault=hang"});
    opts.reply_timeout = 200ms;
    opts.exit_grace = 60s; // a stop that waited for this would fail the test
    test::test_runtime rt;
    test::kill_signal_override no_kills{rt.io(), 0};
    caf::scoped_actor self{rt.system()};
    auto worker = rt.spawn_worker(opts, "worker 7");
    self->send(worker, compute_atom::value, job_for(segments[0], 1));
    std::this_thread::sleep_for(400ms); // killed at 200 ms, given up on at 1200 ms
    auto stuck_pid = stats_of(self, worker).pid;
    auto began = std::chrono::steady_clock::now();
    std::optional<int32_t> status;
    self->request(worker, 10s, stop_atom::value)
        .receive([&](int32_t s) { status = s; }, [](caf::error&) {});
    REQUIRE(status);
    CHECK(std::chrono::steady_clock::now() - began < process::kill_wait + 2s);
    CHECK(*status == -9);
    // Still alive; reaped once it exits.
    test::check_reaped_once_killed(stuck_pid);
  }
  check_nothing_left(fds);
}

TEST_CASE("a hanging child fails the request once retries are used up") {
  with_worker(
      {"fault=hang", "fault-after=0"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::timeout);
        CHECK_THAT(
            render(r.error()),
            Catch::Contains("worker 7: get_loss_and_error_signal of segment 'corpus/rec/seg-0'") &&
                Catch::Contains("no reply within 300 ms (replyTimeout)") &&
                Catch::Contains("killed by signal 9"));
      },
      [](sprint_options& opts) {
        opts.reply_timeout = 300ms;
        opts.max_retries = 1;
      });
}

TEST_CASE("garbage from a child is a protocol failure: restart and resend") {
  with_worker({"fault=garbage", "fault-after=1"},
              [](worker_env& env) { compute_across_one_restart(env); });
}

TEST_CASE("a reply announced larger than its request allows is a protocol failure at once") {
  // The first child begins its second reply with a 2 GiB length prefix and
  // stops: the worker cannot wait for replyTimeout (an hour here), it must
  // see that no reply to an 8 x 5 request is that large, kill, restart and
  // resend; the resent request's result is exact.
  with_worker(
      {"fault=oversized-prefix", "fault-after=1"},
      [](worker_env& env) { compute_across_one_restart(env); },
      [](sprint_options& opts) { opts.reply_timeout = std::chrono::hours{1}; });
}

TEST_CASE("an oversized reply fails the request with the sizes, once retries are used up") {
  with_worker(
      {"fault=oversized-prefix", "fault-after=0"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK_THAT(render(r.error()),
                   Catch::Contains("length prefix announces 2147483647 bytes, more than the " +
                                   std::to_string(protocol::max_loss_reply_size(8, dim)) +
                                   " bytes a reply to its request can take"));
      },
      [](sprint_options& opts) {
        opts.reply_timeout = std::chrono::hours{1};
        opts.max_retries = 1;
      });
}

TEST_CASE("a memo bomb as a reply is a protocol failure: restart and resend, in bounded memory") {
  // Half a MiB of reply that a reader without a bound would expand to 3 GB.
  with_worker({"fault=bomb", "fault-after=1"}, [](worker_env& env) {
    const long peak_before = peak_rss_kib();
    compute_across_one_restart(env);
    CHECK(peak_rss_kib() - peak_before < 256 * 1024);
  });
}

TEST_CASE("a memo bomb fails the request with the reader's bound once retries are used up") {
  with_worker(
      {"fault=bomb", "fault-after=0"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::child_failed);
        CHECK_THAT(render(r.error()), Catch::Contains("segment 'corpus/rec/seg-0'") &&
                                          Catch::Contains("the child sent a malformed message") &&
                                          Catch::Contains("the values would hold more than") &&
                                          Catch::Contains("it began with"));
      },
      [](sprint_options& opts) { opts.max_retries = 0; });
}

TEST_CASE("a well-formed reply of the wrong shape is a protocol failure: restart and resend") {
  // The first child answers its second loss request with a 9 x 5 error
  // signal for 8 x 5 posteriors: never a silent wrong result.
  with_worker({"fault=wrong-shape", "fault-after=1"},
              [](worker_env& env) { compute_across_one_restart(env); });
}

TEST_CASE("a reply of the wrong shape names the request and quotes what arrived") {
  with_worker(
      {"fault=wrong-shape", "fault-after=0"},
      [](worker_env& env) {
        auto r = compute(env.self, env.worker, job_for(env.segments[0], 1));
        REQUIRE_FALSE(r);
        CHECK_THAT(render(r.error()),
                   Catch::Contains("worker 7: get_loss_and_error_signal of segment "
                                   "'corpus/rec/seg-0': the child's reply is not a valid answer") &&
                       Catch::Contains("[9, 5]") &&
                       Catch::Contains("the reply began with b'\\x80"));
      },
      [](sprint_options& opts) { opts.max_retries = 1; });
}

TEST_CASE("replies written behind a broken one are never taken as answers") {
  // Four requests at once: the child answers the first, breaks the second
  // (wrong shape) and still answers the two written behind it before the
  // kill lands. Those answers belong to the third and fourth requests, not
  // to the second: all four results must be exact.
  for (const char* fault : {"fault=wrong-shape", "fault=garbage"}) {
    INFO(fault);
    with_worker({fault, "fault-after=1"}, [](worker_env& env) {
      std::vector<segment_job> jobs;
      std::vector<caf::expected<double>> results(4, 0.0);
      for (size_t i = 0; i < 4; ++i)
        jobs.push_back(job_for(env.segments[i], 10 + i));
      std::vector<decltype(env.self->request(env.worker, caf::infinite, compute_atom::value,
                                             jobs[0]))>
          replies;
      for (size_t i = 0; i < 4; ++i)
        replies.push_back(
            env.self->request(env.worker, caf::infinite, compute_atom::value, jobs[i]));
      for (size_t i = 0; i < 4; ++i)
        replies[i].receive([&](double loss) { results[i] = loss; },
                           [&](caf::error& err) { results[i] = std::move(err); });
      for (size_t i = 0; i < 4; ++i) {
        INFO("request " << i);
        REQUIRE(results[i]);
        auto expected = test::reference_loss(env.corpus, env.segments[i].name,
                                             jobs[i].log_posteriors.storage->to_vector(), dim);
        CHECK(*results[i] == expected.loss);
        CHECK(jobs[i].error_signal.storage->to_vector() == expected.error_signal);
      }
      // Every child breaks its second request: the first breaks request 1,
      // its successor request 2, the next request 3; the fourth child ends it.
      CHECK(stats_of(env.self, env.worker).restarts == 3);
    });
  }
}

TEST_CASE("a segment that keeps killing its child fails alone, after maxRetries") {
  with_worker({"crash-segment=corpus/rec/seg-2"}, [](worker_env& env) {
    auto bad = compute(env.self, env.worker, job_for(env.segments[2], 1));
    REQUIRE_FALSE(bad);
    CHECK(bad.error() == errc::child_failed);
    CHECK_THAT(render(bad.error()), Catch::Contains("segment 'corpus/rec/seg-2'") &&
                                        Catch::Contains("exited with status 3"));
    // The original child and two restarts (maxRetries 2) all died on it.
    CHECK(stats_of(env.self, env.worker).restarts == 2);
    // Other segments still work, on a fresh child.
    compute_exact(env, 3, 2);
  });
}

TEST_CASE("a crash charges only the request the child was serving, not the one written behind it") {
  with_worker({"crash-segment=corpus/rec/seg-2"}, [](worker_env& env) {
    // Both are written to the child at once; each child dies on seg-2 while
    // seg-3 waits in its pipe, unread.
    auto bad = job_for(env.segments[2], 1);
    auto good = job_for(env.segments[3], 2);
    auto expected = test::reference_loss(env.corpus, env.segments[3].name,
                                         random_log_posteriors(8, dim, 2), dim);
    caf::expected<double> bad_result = 0.0;
    caf::expected<double> good_result = 0.0;
    auto bad_reply = env.self->request(env.worker, caf::infinite, compute_atom::value, bad);
    auto good_reply = env.self->request(env.worker, caf::infinite, compute_atom::value, good);
    bad_reply.receive([&](double loss) { bad_result = loss; },
                      [&](caf::error& err) { bad_result = std::move(err); });
    good_reply.receive([&](double loss) { good_result = loss; },
                       [&](caf::error& err) { good_result = std::move(err); });
    REQUIRE_FALSE(bad_result);
    CHECK_THAT(render(bad_result.error()), Catch::Contains("segment 'corpus/rec/seg-2'"));
    // seg-2 killed the original child and both restarts (maxRetries 2); seg-3
    // then ran on a fourth child, as if it had been sent alone.
    REQUIRE(good_result);
    CHECK(*good_result == expected.loss);
    CHECK(stats_of(env.self, env.worker).restarts == 3);
  });
}

TEST_CASE(
    "a request written behind another gets its full replyTimeout from when the child begins it") {
  // Each segment takes 400 ms and the timeout is 700 ms: the second of two
  // requests written together is answered 800 ms after it was written, but
  // 400 ms after the child began it, which is what the timeout bounds.
  with_worker(
      {"delay-ms=400"},
      [](worker_env& env) {
        auto first = env.self->request(env.worker, caf::infinite, compute_atom::value,
                                       job_for(env.segments[0], 1));
        auto second = env.self->request(env.worker, caf::infinite, compute_atom::value,
                                        job_for(env.segments[1], 2));
        caf::error failure;
        for (auto* reply : {&first, &second})
          reply->receive([](double) {}, [&](caf::error& err) { failure = std::move(err); });
        CHECK_FALSE(failure);
        CHECK(stats_of(env.self, env.worker).restarts == 0);
      },
      [](sprint_options& opts) { opts.reply_timeout = 700ms; });
}

TEST_CASE("stopping a worker with a request in flight cancels it and still ends the child") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir), {"delay-ms=400"}));
    {
      caf::scoped_actor self{rt.system()};
      auto job = job_for(segments[0], 1);
      auto handle = self->request(worker, caf::infinite, compute_atom::value, job);
      // Let the request reach the child, then stop the worker.
      std::this_thread::sleep_for(100ms);
      caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
      caf::error err;
      handle.receive([&](double) {}, [&](caf::error& e) { err = e; });
      CHECK(err == errc::cancelled);
    }
    // The worker ends once its child has answered, read `exit` and exited.
    rt.shutdown();
  }
  check_nothing_left(fds);
}

TEST_CASE("tearing down the runtime while a child computes leaves nothing behind") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir), {"delay-ms=2000"}));
    caf::scoped_actor self{rt.system()};
    self->send(worker, compute_atom::value, job_for(segments[0], 1));
    std::this_thread::sleep_for(200ms);
    // The destructor stops the worker (exit), awaits it, and stops the io thread.
  }
  check_nothing_left(fds);
}

TEST_CASE("a worker that is killed fails its queued requests instead of dropping them") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 2, dim);
    test::test_runtime rt;
    auto worker = rt.spawn_worker(sim_options(test::corpus_path(dir), {"delay-ms=300"}));
    {
      caf::scoped_actor self{rt.system()};
      auto first =
          self->request(worker, caf::infinite, compute_atom::value, job_for(segments[0], 1));
      auto second =
          self->request(worker, caf::infinite, compute_atom::value, job_for(segments[1], 2));
      std::this_thread::sleep_for(100ms);
      // `kill` cannot be trapped: no graceful stop, but no silent drop either.
      caf::anon_send_exit(worker, caf::exit_reason::kill);
      caf::error e1;
      caf::error e2;
      first.receive([](double) {}, [&](caf::error& e) { e1 = e; });
      second.receive([](double) {}, [&](caf::error& e) { e2 = e; });
      CHECK(e1 == errc::cancelled);
      CHECK(e2 == errc::cancelled);
    }
    rt.shutdown();
  }
  check_nothing_left(fds);
}
