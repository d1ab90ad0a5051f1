#pragma once

/// @file
/// Spawning the sequence-training scheduler (see `seqtrain_scheduler_actor`
/// for its messages and `seqtrain_pipeline.hpp` for its queues).

#include <caf/fwd.hpp>

#include "sprintrt/pool_interface.hpp"
#include "sprintrt/seqtrain_interface.hpp"

namespace sprintrt::detail {

/// Spawns a scheduler that computes forwarded sequences on `pool` (single
/// segment requests, at most `options.max_in_flight` at once). It owns
/// nothing but its queues: stopping it (an exit message) fails a waiting
/// train request with `cancelled` and discards what is being computed; the
/// pool stays. When the pool ends, the scheduler ends too.
seqtrain_scheduler_actor spawn_seqtrain_scheduler(caf::actor_system& system, worker_pool_actor pool,
                                                  seqtrain_options options);

} // namespace sprintrt::detail
