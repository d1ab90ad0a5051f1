// A blocking caller runs the first handlers of its own request on its own
// thread (and the io thread those of a small reply), but never work that
// would run in parallel, nor work that would hold it past its reply.

#include "actors/execution/caller_execution_unit.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/caller/blocking_ask.hpp"
#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

using clock_type = std::chrono::steady_clock;

/// How often and, last, where a handler ran.
struct trace {
  std::atomic<int> runs{0};
  std::atomic<std::thread::id> thread{};

  void record() {
    thread = std::this_thread::get_id();
    ++runs;
  }

  /// Waits (up to 10 s) until the handler has run `n` times.
  bool wait_for(int n) const {
    auto give_up = clock_type::now() + std::chrono::seconds{10};
    while (runs.load() < n)
      if (clock_type::now() > give_up)
        return false;
      else
        std::this_thread::yield();
    return true;
  }

  bool on_this_thread() const { return thread.load() == std::this_thread::get_id(); }
};

/// Records `t` and replies `x + 1`. (Actors are spawned as functions with
/// arguments: CAF 0.17 dereferences a null argument tuple for a lambda
/// without any.)
caf::behavior recorder(caf::event_based_actor*, trace* t) {
  return {[=](int x) {
    t->record();
    return x + 1;
  }};
}

/// Records `t`, then has `next` answer.
caf::behavior relay(caf::event_based_actor* self, trace* t, caf::actor next) {
  return {[=](int x) {
    t->record();
    return self->delegate(next, x);
  }};
}

/// Replies at once, then passes `x` on to `next` (like a seqtrain forward
/// that queues work behind its answer).
caf::behavior answer_then_pass_on(caf::event_based_actor* self, caf::actor next) {
  return {[=](int x) {
    if (x > 0)
      self->send(next, x);
    return x;
  }};
}

/// Waits (up to 10 s) until `release` is set, then records `t`: work that
/// must not run on the caller's thread, or the caller would hang here.
caf::behavior waits_for_release(caf::event_based_actor*, trace* t, std::atomic<bool>* release) {
  return {[=](int) {
    auto give_up = clock_type::now() + std::chrono::seconds{10};
    while (!release->load() && clock_type::now() < give_up)
      std::this_thread::yield();
    t->record();
  }};
}

/// Counts arrivals and waits (up to 10 s) until `expected` have arrived;
/// replies whether all did: two of these complete only if they run at the
/// same time, on two threads. `x == 0` only wakes it up.
caf::behavior meeting_point(caf::event_based_actor*, std::atomic<int>* arrived, int expected) {
  return {[=](int x) {
    if (x == 0)
      return true;
    ++*arrived;
    auto give_up = clock_type::now() + std::chrono::seconds{10};
    while (arrived->load() < expected)
      if (clock_type::now() > give_up)
        return false;
    return true;
  }};
}

/// Asks `a` and `b` from one handler and replies whether both met.
caf::behavior fan_out(caf::event_based_actor* self, caf::actor a, caf::actor b) {
  return {[=](int x) {
    auto rp = self->make_response_promise<bool>();
    auto answers = std::make_shared<int>(0);
    auto all_met = std::make_shared<bool>(true);
    for (const auto& who : {a, b})
      self->request(who, caf::infinite, x).then([=](bool met) mutable {
        *all_met = *all_met && met;
        if (++*answers == 2)
          rp.deliver(*all_met);
      });
    return rp;
  }};
}

/// Computes for 1 ms, then has `next` answer.
caf::behavior long_then_delegate(caf::event_based_actor* self, caf::actor next) {
  return {[=](int x) {
    auto until = clock_type::now() + std::chrono::milliseconds{1};
    while (clock_type::now() < until) {
    }
    return self->delegate(next, x);
  }};
}

/// Asks `whom` once so that it has started and waits for messages: a new
/// actor is still queued for its start, and a message then only joins its
/// mailbox instead of making it runnable.
template <class Reply = int>
void warm_up(sprint_runtime& rt, const caf::actor& whom) {
  caf::scoped_actor scoped{rt.system()};
  bool answered = false;
  scoped->request(whom, caf::infinite, 0)
      .receive([&](Reply) { answered = true; }, [](caf::error&) {});
  REQUIRE(answered);
}

/// Waits (up to 10 s) until each of `actors` has finished its resume and
/// waits for a message: the reply to a warm-up can arrive while the actor
/// that sent it is still running, and a message then joins its mailbox
/// without making it runnable.
void wait_idle(std::initializer_list<caf::actor> actors) {
  for (const auto& handle : actors) {
    auto* actor =
        dynamic_cast<caf::scheduled_actor*>(caf::actor_cast<caf::abstract_actor*>(handle));
    REQUIRE(actor != nullptr);
    auto give_up = clock_type::now() + std::chrono::seconds{10};
    while (!actor->mailbox().blocked() && clock_type::now() < give_up)
      std::this_thread::yield();
    REQUIRE(actor->mailbox().blocked());
  }
}

} // namespace

TEST_CASE("a blocking ask runs the receiver and the actor it asks on the caller's thread") {
  sprint_runtime rt;
  auto& system = rt.system();
  trace first, second;
  auto end = system.spawn(recorder, &second);
  auto front = system.spawn(relay, &first, end);
  warm_up(rt, front);
  // The receiver always runs here. The actor it asks does too unless the
  // receiver's handler ran longer than `affine_sharing::long_job` (20 us),
  // which a sanitizer build or a busy machine can make it now and then: so
  // up to 50 tries, of which one must see both here.
  bool both_here = false;
  for (int attempt = 0; attempt < 50 && !both_here; ++attempt) {
    wait_idle({front, end});
    auto reply = detail::blocking_ask<int>(rt, front, 41);
    REQUIRE(reply);
    CHECK(*reply == 42);
    CHECK(first.on_this_thread());
    both_here = second.on_this_thread();
  }
  CHECK(both_here);
}

TEST_CASE("a blocking ask returns with its reply and leaves the work queued behind it") {
  sprint_runtime rt;
  auto& system = rt.system();
  trace behind;
  std::atomic<bool> release{false};
  auto slow = system.spawn(waits_for_release, &behind, &release);
  auto front = system.spawn(answer_then_pass_on, slow);
  warm_up(rt, front);
  auto reply = detail::blocking_ask<int>(rt, front, 7);
  REQUIRE(reply);
  CHECK(*reply == 7);
  // Returned while the work behind the answer waits for us: it cannot be on
  // this thread.
  CHECK(behind.runs == 0);
  release = true;
  REQUIRE(behind.wait_for(1));
  CHECK_FALSE(behind.on_this_thread());
}

TEST_CASE("two jobs made runnable at once still run at the same time") {
  sprint_runtime rt;
  auto& system = rt.system();
  std::atomic<int> arrived{0};
  auto a = system.spawn(meeting_point, &arrived, 2);
  auto b = system.spawn(meeting_point, &arrived, 2);
  auto front = system.spawn(fan_out, a, b);
  warm_up<bool>(rt, front);
  // Had the caller kept both, it would run them one after the other and the
  // first would give up waiting for the second.
  auto met = detail::blocking_ask<bool>(rt, front, 1);
  REQUIRE(met);
  CHECK(*met);
}

TEST_CASE("a job made runnable by a long handler goes to the scheduler") {
  sprint_runtime rt;
  auto& system = rt.system();
  trace after;
  auto end = system.spawn(recorder, &after);
  auto front = system.spawn(long_then_delegate, end);
  warm_up(rt, front);
  auto reply = detail::blocking_ask<int>(rt, front, 1);
  REQUIRE(reply);
  CHECK(*reply == 2);
  CHECK_FALSE(after.on_this_thread());
}

TEST_CASE("once its run is over, the unit hands every job to the scheduler") {
  sprint_runtime rt;
  auto& system = rt.system();
  trace t;
  auto target = system.spawn(recorder, &t);
  warm_up(rt, target);
  wait_idle({target});
  caf::scoped_actor self{system};
  detail::caller_execution_unit caller{system};
  // Sends `x` to `target` with `caller` as the sending context.
  auto send_from_caller = [&](int x) {
    auto* own = self->context();
    self->context(&caller);
    self->send(target, x);
    self->context(own);
  };
  // Queued while the unit accepts: run here.
  send_from_caller(1);
  caller.run_until([] { return false; });
  REQUIRE(t.wait_for(2));
  CHECK(t.on_this_thread());
  CHECK(caller.resumed() == 1);
  // Sent after `run_until`: a scheduler thread takes it.
  send_from_caller(2);
  REQUIRE(t.wait_for(3));
  CHECK_FALSE(t.on_this_thread());
  CHECK(caller.resumed() == 1);
}

TEST_CASE("send_and_run handles a message on the sending thread, outside the scheduler") {
  sprint_runtime rt;
  auto& system = rt.system();
  trace handled;
  auto receiver = system.spawn(recorder, &handled);
  warm_up(rt, receiver);
  wait_idle({receiver});
  std::thread::id sender;
  std::thread io_like{[&] {
    sender = std::this_thread::get_id();
    detail::send_and_run(caf::actor_cast<caf::strong_actor_ptr>(receiver), caf::make_message(5));
  }};
  io_like.join();
  REQUIRE(handled.wait_for(2));
  CHECK(handled.thread.load() == sender);
}
