#include "actors/pool/worker_pool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/caller/blocking_ask.hpp"
#include "actors/remote/remote_worker.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// What the test workers did, shared with the test (workers run on CAF's
/// threads; the test reads after its blocking requests returned).
struct worker_log {
  std::atomic<size_t> made{0};
  std::atomic<size_t> alive{0};
  std::mutex mutex;
  std::vector<std::string> names;
};

/// A worker without a child: the error signal is log-posterior + 1, the
/// loss is the segment's frames + 0.25, the FSA of segment `s` is one edge
/// 0 -> 1 emitting `s.size()` with weight 0.5.
sprint_worker_actor::behavior_type test_worker(sprint_worker_actor::pointer self,
                                               std::shared_ptr<worker_log> log) {
  ++log->alive;
  self->attach_functor([log] { --log->alive; });
  auto served = std::make_shared<uint64_t>(0);
  return {
      [served](compute_atom, segment_job& job) -> double {
        for (size_t r = 0; r < job.log_posteriors.rows; ++r)
          for (size_t c = 0; c < job.log_posteriors.cols; ++c)
            job.error_signal.row(r)[c] = job.log_posteriors.row(r)[c] + 1.0f;
        ++*served;
        return static_cast<double>(job.log_posteriors.rows) + 0.25;
      },
      [served](fsa_atom, fsa_query& query) -> segment_fsa {
        ++*served;
        return {2, {0, 1, static_cast<uint32_t>(query.text.size())}, {0.5f}};
      },
      [served](stats_atom) {
        worker_stats stats;
        stats.requests_served = *served;
        return stats;
      },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

/// A source of test workers that records what it made.
worker_source test_source(std::shared_ptr<worker_log> log, size_t capacity) {
  worker_source source;
  source.description = "test workers";
  source.capacity = capacity;
  source.make = [log](caf::actor_system& system, size_t, const std::string& name) {
    ++log->made;
    {
      std::lock_guard<std::mutex> guard{log->mutex};
      log->names.push_back(name);
    }
    return system.spawn(test_worker, log);
  };
  return source;
}

/// A worker that takes a loss job, hands its output gate to the test
/// through `held` and never answers: a child still computing.
sprint_worker_actor::behavior_type
holding_worker(sprint_worker_actor::pointer self,
               std::shared_ptr<std::promise<std::shared_ptr<output_gate>>> held) {
  auto promises = std::make_shared<std::vector<caf::typed_response_promise<double>>>();
  return {
      [self, held, promises](compute_atom, segment_job& job) -> caf::result<double> {
        held->set_value(job.gate);
        promises->push_back(self->make_response_promise<double>());
        return promises->back();
      },
      [](fsa_atom, fsa_query&) -> caf::result<segment_fsa> {
        return make_error(errc::invalid_input, "no FSAs here");
      },
      [](stats_atom) { return worker_stats{}; },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

const float log_half = std::log(0.5f);

/// A [T, B, 2] batch of uniform log-posteriors with tags "a", "bb", ...
batch uniform_batch(size_t max_frames, std::vector<int64_t> lengths) {
  batch b;
  size_t size = lengths.size();
  b.log_posteriors = *tensor::from_vector(std::vector<float>(max_frames * size * 2, log_half),
                                          {max_frames, size, 2});
  b.seq_lengths = std::move(lengths);
  for (size_t i = 0; i < size; ++i)
    b.tags.push_back(std::string(i + 1, static_cast<char>('a' + i)));
  return b;
}

/// Asks `pool` for `b` and waits.
caf::expected<batch_result> compute(caf::actor_system& system, const worker_pool_actor& pool,
                                    batch b) {
  return detail::blocking_ask<batch_result>(system, pool, compute_atom::value, std::move(b));
}

/// Asks `pool` for `x...` and waits.
template <class Result, class... Ts>
caf::expected<Result> ask(caf::actor_system& system, const worker_pool_actor& pool, Ts... xs) {
  return detail::blocking_ask<Result>(system, pool, std::move(xs)...);
}

} // namespace

TEST_CASE("a pool serves batches, automata and single segments from a custom worker source") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto pool = rt.pool(test_source(log, 3), "test pool");

  auto result = compute(rt.system(), pool, uniform_batch(3, {3, 2}));
  REQUIRE(result);
  CHECK(result->loss == std::vector<float>{3.25f, 2.25f});
  float es = log_half + 1.0f;
  // [T=3, B=2, D=2]: segment 1's third frame is padding, zero.
  CHECK(std::vector<float>(result->error_signal.data(), result->error_signal.data() + 12) ==
        std::vector<float>{es, es, es, es, es, es, es, es, es, es, 0, 0});

  auto automata = ask<batch_automata>(rt.system(), pool, automata_atom::value,
                                      std::vector<std::string>{"a", "bb"});
  REQUIRE(automata);
  CHECK(automata->edges == std::vector<uint32_t>{0, 2, 1, 3, 1, 2, 0, 1});
  CHECK(automata->weights == std::vector<float>{0.5f, 0.5f});
  CHECK(automata->start_end_states == std::vector<uint32_t>{0, 2, 1, 3});

  segment_job job{"ccc", matrix_slice::dense(4, 2), matrix_slice::dense(4, 2)};
  auto loss = ask<double>(rt.system(), pool, compute_atom::value, job);
  REQUIRE(loss);
  CHECK(*loss == 4.25);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(8, 1.0f));

  auto fsa = ask<segment_fsa>(rt.system(), pool, fsa_atom::value,
                              fsa_query{fsa_source::segment_name, "dddd"});
  REQUIRE(fsa);
  CHECK(fsa->num_states == 2);
  CHECK(fsa->edges == std::vector<uint32_t>{0, 1, 4});

  auto stats = ask<pool_stats>(rt.system(), pool, stats_atom::value);
  REQUIRE(stats);
  CHECK(stats->batches == 1);
  CHECK(stats->segments == 3);
  CHECK(stats->failed_segments == 0);
  CHECK(stats->automata == 1);
  CHECK(stats->fsa_exports == 3);
  uint64_t served = 0;
  for (const auto& w : stats->workers)
    served += w.requests_served;
  CHECK(served == 6);
  // The batch needed two workers; the single requests found one of them idle.
  CHECK(log->made == 2);
  CHECK(stats->workers.size() == 2);
  std::lock_guard<std::mutex> guard{log->mutex};
  CHECK(log->names == std::vector<std::string>{"test pool worker 0", "test pool worker 1"});
}

TEST_CASE("a pool makes no more workers than its source's capacity") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto pool = rt.pool(test_source(log, 2));

  auto result = compute(rt.system(), pool, uniform_batch(5, {5, 1, 4, 2, 3}));
  REQUIRE(result);
  CHECK(result->loss == std::vector<float>{5.25f, 1.25f, 4.25f, 2.25f, 3.25f});
  CHECK(log->made == 2);

  // Five single requests at once: they wait for the two workers in turn.
  caf::scoped_actor self{rt.system()};
  using handle = decltype(self->request(pool, caf::infinite, compute_atom::value, segment_job{}));
  std::vector<handle> pending;
  for (size_t i = 0; i < 5; ++i) {
    segment_job job{"s" + std::to_string(i), matrix_slice::dense(i + 1, 2),
                    matrix_slice::dense(i + 1, 2)};
    pending.push_back(self->request(pool, caf::infinite, compute_atom::value, std::move(job)));
  }
  std::vector<double> losses;
  for (auto& reply : pending)
    reply.receive([&](double loss) { losses.push_back(loss); },
                  [&](caf::error& err) {
                    losses.push_back(-1);
                    FAIL_CHECK(render(err));
                  });
  CHECK(losses == std::vector<double>{1.25, 2.25, 3.25, 4.25, 5.25});
  CHECK(log->made == 2);
  auto stats = ask<pool_stats>(rt.system(), pool, stats_atom::value);
  REQUIRE(stats);
  CHECK(stats->workers.size() == 2);
  CHECK(stats->segments == 10);
}

TEST_CASE("a pool whose source is unavailable refuses every request with its error") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto source = test_source(log, 2);
  source.unavailable = make_error(errc::invalid_options, "no workers here");
  auto pool = rt.pool(std::move(source), "closed pool");

  auto result = compute(rt.system(), pool, uniform_batch(2, {2}));
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_options);
  CHECK(render(result.error()) == "invalid_options: closed pool: no workers here");
  auto automata =
      ask<batch_automata>(rt.system(), pool, automata_atom::value, std::vector<std::string>{"a"});
  CHECK(automata.error() == errc::invalid_options);
  segment_job job{"a", matrix_slice::dense(1, 2), matrix_slice::dense(1, 2)};
  CHECK(ask<double>(rt.system(), pool, compute_atom::value, job).error() == errc::invalid_options);
  CHECK(
      ask<segment_fsa>(rt.system(), pool, fsa_atom::value, fsa_query{fsa_source::segment_name, "a"})
          .error() == errc::invalid_options);
  CHECK(log->made == 0);
}

TEST_CASE("a source without capacity is refused, not used") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto pool = rt.pool(test_source(log, 0), "empty pool");
  auto result = compute(rt.system(), pool, uniform_batch(2, {2}));
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::invalid_options);
  CHECK(log->made == 0);
}

TEST_CASE("pools of their own are named in order and stopped at shutdown") {
  auto log = std::make_shared<worker_log>();
  sprint_runtime rt;
  auto first = rt.pool(test_source(log, 1));
  auto second = rt.pool(test_source(log, 2));
  CHECK(first != second);
  REQUIRE(compute(rt.system(), first, uniform_batch(2, {2, 1})));
  REQUIRE(compute(rt.system(), second, uniform_batch(2, {2, 1})));
  CHECK(log->made == 3);
  CHECK(log->alive == 3);
  {
    std::lock_guard<std::mutex> guard{log->mutex};
    CHECK(log->names ==
          std::vector<std::string>{"pool 0 worker 0", "pool 1 worker 0", "pool 1 worker 1"});
  }
  // Returns only once every actor is done: a pool left running would hang.
  rt.shutdown();
  CHECK(rt.system().registry().running() == 0);
}

TEST_CASE("a pool of its own that nobody holds any more ends, and its workers with it") {
  auto log = std::make_shared<worker_log>();
  sprint_runtime rt;
  {
    auto pool = rt.pool(test_source(log, 2));
    REQUIRE(compute(rt.system(), pool, uniform_batch(2, {2, 1})));
    CHECK(log->alive == 2);
  }
  // CAF ends an actor nobody can reach; the registry holds pools weakly.
  for (int i = 0; i < 10000 && log->alive > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  CHECK(log->alive == 0);
}

TEST_CASE("a pool that stops closes a single job's output gate before it answers cancelled") {
  sprint_runtime rt;
  auto held = std::make_shared<std::promise<std::shared_ptr<output_gate>>>();
  worker_source source;
  source.description = "holding workers";
  source.capacity = 1;
  source.make = [held](caf::actor_system& system, size_t, const std::string&) {
    return system.spawn(holding_worker, held);
  };
  auto pool = rt.pool(source, "gate pool");
  // The caller's job has no gate: the pool gives it one.
  segment_job job{"a", matrix_slice::dense(2, 2), matrix_slice::dense(2, 2)};
  caf::expected<double> result = 0.0;
  std::thread caller{[&] { result = ask<double>(rt.system(), pool, compute_atom::value, job); }};
  auto gate = held->get_future().get();
  REQUIRE(gate);
  CHECK_FALSE(gate->closed());
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  caller.join();
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::cancelled);
  // Whatever the worker does with the job from now on, it cannot write.
  CHECK(gate->closed());
}

namespace {

/// Slot states a test sets (the pool reads them as a remote source's).
struct test_slots {
  std::vector<std::shared_ptr<remote_slot>> slots;

  explicit test_slots(size_t count) {
    for (size_t i = 0; i < count; ++i)
      slots.push_back(std::make_shared<remote_slot>());
  }
};

/// A worker whose pool went away: it marks its slot unavailable and answers
/// every request with `worker_unavailable`, as a remote worker that lost its
/// connection does.
sprint_worker_actor::behavior_type unavailable_worker(sprint_worker_actor::pointer self,
                                                      std::shared_ptr<remote_slot> slot,
                                                      std::string why) {
  auto refuse = [slot, why] {
    slot->set({1, why});
    return make_error(errc::worker_unavailable, why);
  };
  return {
      [refuse](compute_atom, segment_job&) -> caf::result<double> { return refuse(); },
      [refuse](fsa_atom, fsa_query&) -> caf::result<segment_fsa> { return refuse(); },
      [](stats_atom) { return worker_stats{}; },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

/// A source whose slot `i` is a test worker, or an unavailable one where
/// `gone[i]`; slot states come from `slots`.
worker_source slotted_source(std::shared_ptr<worker_log> log, std::shared_ptr<test_slots> slots,
                             std::vector<bool> gone) {
  auto source = test_source(log, slots->slots.size());
  source.make = [log, slots, gone](caf::actor_system& system, size_t index,
                                   const std::string&) -> sprint_worker_actor {
    ++log->made;
    if (gone[index])
      return system.spawn(unavailable_worker, slots->slots[index],
                          "slot " + std::to_string(index) + " is gone");
    return system.spawn(test_worker, log);
  };
  source.slot_state = [slots](size_t index) { return slots->slots[index]->get(); };
  return source;
}

} // namespace

TEST_CASE("a pool sends the work of an unavailable worker to the others, exactly") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto slots = std::make_shared<test_slots>(3);
  auto pool = rt.pool(slotted_source(log, slots, {false, true, false}));
  // Made at once (workers that come and go connect early).
  auto stats = ask<pool_stats>(rt.system(), pool, stats_atom::value);
  REQUIRE(stats);
  CHECK(log->made == 3);

  auto result = compute(rt.system(), pool, uniform_batch(6, {6, 5, 4, 3, 2, 1}));
  REQUIRE(result);
  CHECK(result->loss == std::vector<float>{6.25f, 5.25f, 4.25f, 3.25f, 2.25f, 1.25f});
  segment_job job{"single", matrix_slice::dense(2, 2), matrix_slice::dense(2, 2)};
  auto loss = ask<double>(rt.system(), pool, compute_atom::value, job);
  REQUIRE(loss);
  CHECK(*loss == 2.25);
  auto automata = ask<batch_automata>(rt.system(), pool, automata_atom::value,
                                      std::vector<std::string>{"a", "bb", "ccc"});
  REQUIRE(automata);
  CHECK(automata->weights.size() == 3);

  stats = ask<pool_stats>(rt.system(), pool, stats_atom::value);
  REQUIRE(stats);
  CHECK(stats->failed_segments == 0);
  CHECK(stats->segments == 7);
  REQUIRE(stats->workers.size() == 3);
  CHECK(stats->workers[1].requests_served == 0);
  CHECK(stats->workers[0].requests_served + stats->workers[2].requests_served == 10);
}

TEST_CASE("a pool without an available worker fails requests at once, listing the workers once") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto slots = std::make_shared<test_slots>(2);
  auto pool = rt.pool(slotted_source(log, slots, {true, true}), "lost pool");

  auto result = compute(rt.system(), pool, uniform_batch(3, {3, 2, 1}));
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::worker_unavailable);
  auto text = render(result.error());
  INFO(text);
  CHECK(text.find("3 of 3 segments failed") != std::string::npos);
  for (const char* slot : {"worker 0: slot 0 is gone", "worker 1: slot 1 is gone"}) {
    auto first = text.find(slot);
    CHECK(first != std::string::npos);
    CHECK(text.find(slot, first + 1) == std::string::npos);
  }
  // A single request fails too, instead of waiting for a worker.
  segment_job job{"single", matrix_slice::dense(2, 2), matrix_slice::dense(2, 2)};
  auto loss = ask<double>(rt.system(), pool, compute_atom::value, job);
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::worker_unavailable);
  CHECK_THAT(render(loss.error()), Catch::Contains("lost pool: no worker can take it"));
}

TEST_CASE("a pool gives a worker that computes three at once three times the work") {
  sprint_runtime rt;
  auto log = std::make_shared<worker_log>();
  auto slots = std::make_shared<test_slots>(2);
  slots->slots[1]->set({3, ""});
  auto pool = rt.pool(slotted_source(log, slots, {false, false}));
  // Eight equal segments, nothing measured yet: rates 1 and 3. By finish
  // time: 1 -> w1, 2 -> w1, 3 -> w0 (a tie at 1), 4..6 -> w1, 7 -> w0 (a tie
  // at 2), 8 -> w1.
  auto result = compute(rt.system(), pool, uniform_batch(4, std::vector<int64_t>(8, 4)));
  REQUIRE(result);
  auto stats = ask<pool_stats>(rt.system(), pool, stats_atom::value);
  REQUIRE(stats);
  REQUIRE(stats->workers.size() == 2);
  CHECK(stats->workers[0].requests_served == 2);
  CHECK(stats->workers[1].requests_served == 6);
}

namespace {

/// A worker, `name`, that fails every loss job as a far pool's worker
/// (`far_worker`, of the pool "far pool") would, seen through a remote
/// worker to 127.0.0.1:7000 (as `remote_worker`'s `remote_error` makes it);
/// or, without `far`, as it met that failure itself.
sprint_worker_actor::behavior_type failing_worker(sprint_worker_actor::pointer self,
                                                  std::string name, bool far) {
  return {
      [name, far](compute_atom, segment_job&) -> caf::result<double> {
        failure what;
        what.cause = "sprintExecPath '/no/sprint' does not exist";
        what.child.ending = "was never started";
        auto err = make_error(errc::spawn_failed, what);
        if (!far)
          return with_worker(name, "the Sprint child could not be started", err);
        auto far_worker = "far pool worker " + name.substr(name.size() - 1);
        err = in_pool("far pool",
                      with_worker(far_worker, "the Sprint child could not be started", err));
        return with_context("127.0.0.1:7000", err);
      },
      [](fsa_atom, fsa_query&) -> caf::result<segment_fsa> {
        return make_error(errc::invalid_input, "no FSAs here");
      },
      [](stats_atom) { return worker_stats{}; },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

/// A source of two `failing_worker`s.
worker_source failing_source(bool far) {
  worker_source source;
  source.description = "failing workers";
  source.capacity = 2;
  source.make = [far](caf::actor_system& system, size_t, const std::string& name) {
    return system.spawn(failing_worker, name, far);
  };
  return source;
}

} // namespace

TEST_CASE("a cause that every worker of a pool meets is one line of a batch's error, near or far") {
  sprint_runtime rt;
  for (bool far : {false, true}) {
    INFO((far ? "far" : "near"));
    auto pool = rt.pool(failing_source(far), "near pool");
    auto result = compute(rt.system(), pool, uniform_batch(3, {3, 2, 1, 3}));
    REQUIRE_FALSE(result);
    CHECK(result.error() == errc::spawn_failed);
    auto text = error_message(result.error());
    INFO(text);
    // Both workers met it: one line, the worker told as its pool.
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
    const std::string where = far ? "127.0.0.1:7000: far pool: " : "near pool: ";
    CHECK(text.find("near pool: batch: 4 of 4 segments failed\n  4 segments: 0 ('a'), 1 ('bb'), "
                    "2 ('ccc') and 1 more: spawn_failed: " +
                    where +
                    "the Sprint child could not be started: sprintExecPath '/no/sprint' does "
                    "not exist; Sprint child was never started") == 0);
  }
}
