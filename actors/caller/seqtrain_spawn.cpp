#include "sprintrt/seqtrain_scheduler.hpp"

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/caller/actor_census.hpp"
#include "actors/seqtrain/seqtrain_scheduler.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt {

seqtrain_scheduler_actor spawn_seqtrain_scheduler(sprint_runtime& rt, worker_pool_actor pool,
                                                  seqtrain_options options) {
  auto scheduler = spawn_seqtrain_scheduler(rt.system(), std::move(pool), options);
  rt.census().enlist(caf::actor_cast<caf::strong_actor_ptr>(scheduler));
  return scheduler;
}

void stop_seqtrain_scheduler(const seqtrain_scheduler_actor& scheduler) {
  if (scheduler)
    caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
}

} // namespace sprintrt
