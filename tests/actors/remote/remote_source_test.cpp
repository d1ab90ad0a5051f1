// Worker sources with remote pools, without connecting: what a pool is told
// about the workers (description, capacity, resends, slot states) and that
// the local workers keep their slots.

#include "actors/remote/remote_source.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// A local source that records the slots and names it was asked to make,
/// making no actor.
worker_source local_source(std::shared_ptr<std::vector<std::string>> made) {
  worker_source source;
  source.description = "local workers";
  source.capacity = 2;
  source.max_resends = 5;
  source.make = [made](caf::actor_system&, size_t index, const std::string& name) {
    made->push_back(std::to_string(index) + " " + name);
    return sprint_worker_actor{};
  };
  return source;
}

sprint_options two_remotes(size_t locals) {
  sprint_options opts;
  opts.num_instances = locals;
  opts.remote = {{"127.0.0.1", 7001}, {"trainer-b", 7002}};
  return opts;
}

} // namespace

TEST_CASE("without remote endpoints the local source is used as it is") {
  auto made = std::make_shared<std::vector<std::string>>();
  sprint_options opts;
  opts.num_instances = 2;
  auto source = with_remote_pools(local_source(made), opts);
  CHECK(source.description == "local workers");
  CHECK(source.capacity == 2);
  CHECK(source.max_resends == 5);
  CHECK_FALSE(source.slot_state);
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  source.make(system, 1, "pool 0 worker 1");
  CHECK(*made == std::vector<std::string>{"1 pool 0 worker 1"});
}

TEST_CASE("remote endpoints add one slot each after the local workers") {
  auto made = std::make_shared<std::vector<std::string>>();
  auto source = with_remote_pools(local_source(made), two_remotes(2));
  CHECK(source.description == "local workers and remote pools at 127.0.0.1:7001, trainer-b:7002");
  CHECK(source.capacity == 4);
  CHECK(source.max_resends == 5);
  CHECK_FALSE(source.unavailable);
  REQUIRE(source.slot_state);
  // Local slots compute one request at a time and are always there.
  for (size_t local : {0, 1}) {
    auto state = source.slot_state(local);
    CHECK(state.parallelism == 1);
    CHECK(state.unavailable.empty());
  }
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  source.make(system, 0, "pool 0 worker 0");
  source.make(system, 1, "pool 0 worker 1");
  CHECK(*made == std::vector<std::string>{"0 pool 0 worker 0", "1 pool 0 worker 1"});
}

TEST_CASE("remote pools alone are described without local workers, and keep the local error") {
  auto made = std::make_shared<std::vector<std::string>>();
  auto local = local_source(made);
  local.unavailable = make_error(errc::invalid_options, "no local workers");
  auto source = with_remote_pools(std::move(local), two_remotes(0));
  CHECK(source.description == "remote pools at 127.0.0.1:7001, trainer-b:7002");
  CHECK(source.capacity == 2);
  CHECK(source.unavailable == errc::invalid_options);
  CHECK(error_message(source.unavailable) == "no local workers");
}
