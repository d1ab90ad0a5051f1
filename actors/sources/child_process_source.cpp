#include "actors/sources/child_process_source.hpp"

#include <string>

#include "actors/remote/remote_source.hpp"
#include "actors/worker/sprint_worker.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

worker_source child_process_source(process::io_thread& io, const sprint_options& opts) {
  worker_source source;
  source.description = "Sprint children of " + opts.sprint_exec_path;
  source.capacity = opts.num_instances;
  source.max_resends = opts.max_retries;
  // Only a source that starts children needs the program: the options are
  // also those of in-process and remote-only pools, which have none.
  if (opts.num_instances > 0 && opts.sprint_exec_path.empty())
    source.unavailable =
        make_error(errc::invalid_options,
                   "option 'sprintExecPath' is required to start Sprint children (numInstances " +
                       std::to_string(opts.num_instances) +
                       "); in-process simulated workers and remote pools need none");
  // The options are copied into the function: the source outlives the
  // caller's options, and every worker gets its own copy, as it always did.
  source.make = [&io, opts](caf::actor_system& system, size_t, const std::string& name) {
    return spawn_sprint_worker(system, io, opts, name);
  };
  return with_remote_pools(std::move(source), opts);
}

} // namespace sprintrt::detail
