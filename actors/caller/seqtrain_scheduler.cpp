#include "sprintrt/seqtrain_scheduler.hpp"

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/caller/actor_census.hpp"
#include "actors/caller/runtime_access.hpp"
#include "actors/seqtrain/seqtrain_scheduler_actor.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

seqtrain_scheduler_actor spawn_seqtrain_scheduler(sprint_runtime& rt, worker_pool_actor pool,
                                                  seqtrain_options options) {
  if (!pool) {
    logger().error("spawn_seqtrain_scheduler: no pool (an invalid handle, e.g. one asked for "
                   "after the runtime's shutdown): no scheduler is made");
    return {};
  }
  auto scheduler = detail::spawn_seqtrain_scheduler(rt.system(), std::move(pool), options);
  detail::runtime_access::census(rt).enlist(caf::actor_cast<caf::strong_actor_ptr>(scheduler));
  return scheduler;
}

void stop_seqtrain_scheduler(const seqtrain_scheduler_actor& scheduler) {
  if (scheduler)
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
}

} // namespace sprintrt
