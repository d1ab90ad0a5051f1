// The registry of pools, without child processes (no request is sent, so
// no worker is made): one pool per distinct options value, pools of their
// own apart from them, and nothing made once everything was stopped.

#include "actors/caller/pool_registry.hpp"

#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "runtime/io_thread.hpp"

using namespace sprintrt;

namespace {

/// An io thread and an actor system that the registry's pools live in;
/// the registry stops its pools before the system waits for them.
struct registry_fixture {
  runtime::io_thread io;
  caf::actor_system_config config;
  caf::actor_system system{config};
  pool_registry registry{system, io};

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
