// The registry of pools, without child processes (no request is sent, so
// no worker is made): one pool per distinct options value, pools of their
// own apart from them, and nothing made once everything was stopped.

#include "actors/caller/pool_registry.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "process/io_thread.hpp"
#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// An io thread and an actor system that the registry's pools live in;
/// the registry stops its pools before the system waits for them.
struct registry_fixture {
  process::io_thread io;
  caf::actor_system_config config;
  caf::actor_system system{config};
  std::shared_ptr<detail::actor_census> census = std::make_shared<detail::actor_census>();
  pool_registry registry{system, io, census};

  ~registry_fixture() { registry.stop_all(); }

  static sprint_options options(size_t instances) {
    sprint_options opts;
    opts.sprint_exec_path = "/nonexistent/sprint";
    opts.num_instances = instances;
    return opts;
  }

  static worker_source source() {
    worker_source s;
    s.description = "no workers";
    s.make = [](caf::actor_system&, size_t, const std::string&) { return sprint_worker_actor{}; };
    return s;
  }
};

} // namespace

TEST_CASE("the registry gives the same pool for equal options and another for other options") {
  registry_fixture fx;
  auto one = fx.registry.pool(registry_fixture::options(1));
  REQUIRE(one);
  CHECK(fx.registry.pool(registry_fixture::options(1)) == one);
  auto two = fx.registry.pool(registry_fixture::options(2));
  REQUIRE(two);
  CHECK(two != one);
  CHECK(fx.registry.pool(registry_fixture::options(2)) == two);
}

TEST_CASE("pools of their own are new every time and never returned for options") {
  registry_fixture fx;
  auto shared = fx.registry.pool(registry_fixture::options(1));
  auto a = fx.registry.own_pool(registry_fixture::source(), "");
  auto b = fx.registry.own_pool(registry_fixture::source(), "mine");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a != b);
  CHECK(a != shared);
  CHECK(b != shared);
  CHECK(fx.registry.pool(registry_fixture::options(1)) == shared);
}

TEST_CASE("once stopped, the registry makes no pool and forgets those it had") {
  registry_fixture fx;
  auto before = fx.registry.pool(registry_fixture::options(1));
  REQUIRE(before);
  fx.registry.stop_all();
  CHECK_FALSE(fx.registry.pool(registry_fixture::options(1)));
  CHECK_FALSE(fx.registry.own_pool(registry_fixture::source(), "late"));
}

TEST_CASE("the registry's pools are counted until they end") {
  registry_fixture fx;
  auto pool = fx.registry.pool(registry_fixture::options(1));
  REQUIRE(pool);
  auto own = fx.registry.own_pool(registry_fixture::source(), "mine");
  REQUIRE(own);
  CHECK(fx.census->alive() == 2);
  fx.registry.stop_all();
  fx.census->await_all_done();
  CHECK(fx.census->alive() == 0);
}

TEST_CASE("without CAF's network layer a pool with remote pools refuses, saying what to load") {
  registry_fixture fx;
  REQUIRE_FALSE(fx.system.has_middleman());
  auto opts = registry_fixture::options(1);
  opts.remote.push_back({"127.0.0.1", 7001});
  auto pool = fx.registry.pool(opts);
  REQUIRE(pool);
  caf::scoped_actor self{fx.system};
  self->request(pool, caf::infinite, stats_atom::value)
      .receive([](pool_stats&) {}, [](caf::error&) {});
  self->request(pool, caf::infinite, automata_atom::value, std::vector<std::string>{"s"})
      .receive([](batch_automata&) { FAIL("a pool without the network layer answered"); },
               [](caf::error& err) {
                 CHECK(err == errc::invalid_options);
                 CHECK(error_message(err).find("caf::io::middleman") != std::string::npos);
               });
}

TEST_CASE("the census stops an actor enlisted after it stopped all") {
  registry_fixture fx;
  fx.registry.stop_all();
  fx.census->stop_all();
  // With an argument: CAF 0.17 dereferences a null argument tuple for a
  // function spawned without any.
  auto late = fx.system.spawn(
      [](int offset) -> caf::behavior { return {[offset](int x) { return x + offset; }}; }, 1);
  fx.census->enlist(caf::actor_cast<caf::strong_actor_ptr>(late));
  auto done = std::async(std::launch::async, [&] { fx.census->await_all_done(); });
  REQUIRE(done.wait_for(std::chrono::seconds{10}) == std::future_status::ready);
  CHECK(fx.census->alive() == 0);
}
