// The runtime's scheduling policy: a thread hands a job to another thread
// only when there is work for two, and two actors that must run at the same
// time still do (a rendezvous that one thread alone could never complete).

#include "actors/execution/affine_sharing.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using detail::affine_sharing;

namespace {

using clock_type = std::chrono::steady_clock;

/// Counts arrivals and waits (spinning, as a long handler computes) until
/// `expected` have arrived or 10 s passed; returns whether all arrived.
bool rendezvous(std::atomic<int>& arrived, int expected) {
  ++arrived;
  auto give_up = clock_type::now() + std::chrono::seconds{10};
  while (arrived.load() < expected)
    if (clock_type::now() > give_up)
      return false;
  return true;
}

/// Spins for `d` (a handler doing work).
void busy_for(std::chrono::microseconds d) {
  auto until = clock_type::now() + d;
  while (clock_type::now() < until) {
  }
}

/// An actor that meets the others at `arrived` when told to, and replies
/// whether everyone came. (Actors are spawned as functions with arguments:
/// CAF 0.17 dereferences a null argument tuple for a lambda without any.)
caf::behavior meeting_point(caf::event_based_actor*, std::atomic<int>* arrived, int expected) {
  return {[=](int) { return rendezvous(*arrived, expected); }};
}

/// Sends its request to `a` and `b` from one short handler and replies
/// whether both met.
caf::behavior dispatcher(caf::event_based_actor* self, caf::actor a, caf::actor b) {
  return {[=](int x) {
    auto rp = self->make_response_promise<bool>();
    auto answered = std::make_shared<int>(0);
    auto all_met = std::make_shared<bool>(true);
    for (const auto& who : {a, b})
      self->request(who, caf::infinite, x).then([=](bool met) mutable {
        *all_met = *all_met && met;
        if (++*answered == 2)
          rp.deliver(*all_met);
      });
    return rp;
  }};
}

/// Computes for a while, sends to `other`, then meets it at `arrived`.
caf::behavior long_sender(caf::event_based_actor*, caf::actor other, std::atomic<int>* arrived) {
  return {[=](int x) {
    busy_for(std::chrono::microseconds{2000});
    // Anonymous: the answer `other` returns goes nowhere, not back here.
    caf::anon_send(other, x);
    return rendezvous(*arrived, 2);
  }};
}

/// Asks `who` with 1 and returns its answer (false on error).
bool ask(sprint_runtime& rt, const caf::actor& who) {
  caf::scoped_actor self{rt.system()};
  bool met = false;
  self->request(who, caf::infinite, 1).receive([&](bool x) { met = x; }, [](caf::error&) {});
  return met;
}

} // namespace

TEST_CASE("a job wakes a second thread only when there is work for two") {
  // From a short handler into an empty queue: the sender's thread takes it.
  CHECK_FALSE(affine_sharing::wakes_a_thread(false, false));
  // Another job waits already: two threads have something to do.
  CHECK(affine_sharing::wakes_a_thread(false, true));
  // The sender has run long and may keep its thread busy.
  CHECK(affine_sharing::wakes_a_thread(true, false));
  CHECK(affine_sharing::wakes_a_thread(true, true));
}

TEST_CASE("two jobs sent from one short handler run in parallel") {
  sprint_runtime rt;
  std::atomic<int> arrived{0};
  auto a = rt.system().spawn(meeting_point, &arrived, 2);
  auto b = rt.system().spawn(meeting_point, &arrived, 2);
  // A short handler sends to both: the first joins the empty queue quietly,
  // the second finds it there and wakes the other thread.
  CHECK(ask(rt, rt.system().spawn(dispatcher, a, b)));
}

TEST_CASE("a job sent from a long handler runs while that handler goes on") {
  sprint_runtime rt;
  std::atomic<int> arrived{0};
  auto other = rt.system().spawn(meeting_point, &arrived, 2);
  // The handler has computed for a while when it sends, then waits for the
  // job it sent: only a second thread can run that job.
  CHECK(ask(rt, rt.system().spawn(long_sender, other, &arrived)));
}
