// The default worker source, without starting a child: what a pool is told
// about the Sprint children the options ask for, with and without remote
// pools beside them.

#include "actors/sources/child_process_source.hpp"

#include <catch2/catch.hpp>

#include "process/io_thread.hpp"
#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

TEST_CASE("a child source has numInstances slots, maxRetries resends and names its program") {
  process::io_thread io;
  sprint_options opts;
  opts.sprint_exec_path = "/opt/rasr/nn-trainer";
  opts.num_instances = 3;
  opts.max_retries = 4;
  auto source = child_process_source(io, opts);
  CHECK(source.description == "Sprint children of /opt/rasr/nn-trainer");
  CHECK(source.capacity == 3);
  CHECK(source.max_resends == 4);
  CHECK_FALSE(source.unavailable);
  CHECK_FALSE(source.slot_state);
  CHECK(source.make);
}

TEST_CASE("a child source with remote pools adds their slots after the children") {
  process::io_thread io;
  sprint_options opts;
  opts.sprint_exec_path = "/opt/rasr/nn-trainer";
  opts.num_instances = 2;
  opts.remote = {{"10.0.0.7", 7001}};
  auto source = child_process_source(io, opts);
  CHECK(source.description == "Sprint children of /opt/rasr/nn-trainer and remote pools at "
                              "10.0.0.7:7001");
  CHECK(source.capacity == 3);
  CHECK(source.max_resends == 2);
  REQUIRE(source.slot_state);
  CHECK(source.slot_state(1).parallelism == 1);
}

TEST_CASE("a child source without sprintExecPath refuses, naming the option; remote-only is fine") {
  process::io_thread io;
  sprint_options opts;
  opts.num_instances = 2;
  auto source = child_process_source(io, opts);
  CHECK(source.unavailable == errc::invalid_options);
  CHECK(error_message(source.unavailable) ==
        "option 'sprintExecPath' is required to start Sprint children (numInstances 2); "
        "in-process simulated workers and remote pools need none");
  // No child starts: no program needed.
  opts.num_instances = 0;
  opts.remote = {{"10.0.0.7", 7001}};
  CHECK_FALSE(child_process_source(io, opts).unavailable);
}
