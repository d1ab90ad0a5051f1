// The runtime, without child processes: how its actor system is scheduled,
// the settings a trainer's options ask for, the default worker source it
// hands out, and that nothing is made once it was shut down.

#include "sprintrt/sprint_runtime.hpp"

#include <catch2/catch.hpp>

#include <caf/actor_system_config.hpp>
#include <caf/scheduler/coordinator.hpp>

#include "actors/execution/affine_sharing.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

TEST_CASE("the runtime schedules actors from a shared queue unless told otherwise") {
  sprint_runtime shared;
  using affine = caf::scheduler::coordinator<detail::affine_sharing>;
  CHECK(dynamic_cast<affine*>(&shared.system().scheduler()) != nullptr);
  CHECK(caf::get_or(shared.system().config(), "scheduler.max-threads", size_t{0}) == 2);
  sprint_runtime::settings stealing;
  stealing.shared_queue = false;
  sprint_runtime rt{stealing};
  CHECK(caf::get_or(rt.system().config(), "scheduler.policy", caf::atom("none")) ==
        caf::atom("stealing"));
}

TEST_CASE("the runtime runs as many scheduler threads as its settings say") {
  sprint_runtime::settings three;
  three.scheduler_threads = 3;
  sprint_runtime rt{three};
  CHECK(caf::get_or(rt.system().config(), "scheduler.max-threads", size_t{0}) == 3);
}

TEST_CASE("a trainer's options ask for their TLS files and nothing else") {
  sprint_options opts;
  opts.remote_tls.certificate = "/etc/sprintrt/cert.pem";
  opts.remote_tls.key = "/etc/sprintrt/key.pem";
  opts.remote_tls.ca = "/etc/sprintrt/ca.pem";
  auto config = runtime_settings_for(opts);
  CHECK(config.tls.certificate == "/etc/sprintrt/cert.pem");
  CHECK(config.tls.key == "/etc/sprintrt/key.pem");
  CHECK(config.tls.ca == "/etc/sprintrt/ca.pem");
  sprint_runtime::settings defaults;
  CHECK(config.scheduler_threads == defaults.scheduler_threads);
  CHECK(config.shared_queue == defaults.shared_queue);
  CHECK(runtime_settings_for(sprint_options{}).tls.empty());
}

TEST_CASE("the runtime's default source is the options' Sprint children") {
  sprint_runtime rt;
  sprint_options opts;
  opts.sprint_exec_path = "/opt/rasr/nn-trainer";
  opts.num_instances = 3;
  opts.max_retries = 4;
  auto source = rt.child_process_source(opts);
  CHECK(source.description == "Sprint children of /opt/rasr/nn-trainer");
  CHECK(source.capacity == 3);
  CHECK(source.max_resends == 4);
}

TEST_CASE("a runtime shut down makes no pool, by options or by source") {
  sprint_runtime rt;
  sprint_options opts;
  opts.sprint_exec_path = "/opt/rasr/nn-trainer";
  rt.shutdown();
  CHECK_FALSE(rt.pool(opts));
  CHECK_FALSE(rt.pool(rt.child_process_source(opts), "mine"));
  // A second shutdown does nothing.
  rt.shutdown();
  CHECK_FALSE(rt.pool(opts));
}
