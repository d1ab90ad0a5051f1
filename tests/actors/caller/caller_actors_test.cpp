// The blocking facades ask through one actor per calling thread, kept until
// the runtime shuts down.

#include "actors/caller/caller_actors.hpp"

#include <catch2/catch.hpp>

#include <thread>

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/caller/blocking_ask.hpp"
#include "actors/caller/runtime_access.hpp"
#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// Replies `x * 2` (spawned with an argument: CAF 0.17 dereferences a null
/// argument tuple for a lambda without any).
caf::behavior doubler(caf::event_based_actor*, int) {
  return {[](int x) { return 2 * x; }};
}

} // namespace

TEST_CASE("each thread asks through an actor of its own, the same on every call") {
  sprint_runtime rt;
  auto& callers = detail::runtime_access::callers(rt);
  auto* mine = &callers.of_this_thread();
  CHECK(&callers.of_this_thread() == mine);
  caf::blocking_actor* theirs = nullptr;
  std::thread other{[&] { theirs = &callers.of_this_thread(); }};
  other.join();
  CHECK(theirs != mine);
  CHECK(callers.size() == 2);
  callers.clear();
  CHECK(callers.size() == 0);
}

TEST_CASE("many facade calls from several threads get their own replies, and shutdown ends") {
  sprint_runtime rt;
  auto echo = rt.system().spawn(doubler, 0);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        auto reply = detail::blocking_ask<int>(rt, echo, 1000 * t + i);
        if (!reply || *reply != 2 * (1000 * t + i))
          ++wrong;
      }
    });
  for (auto& thread : threads)
    thread.join();
  CHECK(wrong == 0);
  CHECK(detail::runtime_access::callers(rt).size() == 4);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  rt.shutdown(); // returns: the kept actors do not hold up the actor system
  CHECK(detail::runtime_access::callers(rt).size() == 0);
}
