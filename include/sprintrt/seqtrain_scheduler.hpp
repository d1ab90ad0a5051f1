#pragma once

/// @file
/// The sequence-training scheduler as an actor of its own, for actor-based
/// trainers: spawn it over a pool, talk to it with the messages of
/// `seqtrain_scheduler_actor` (sprintrt/seqtrain_interface.hpp), stop it.
/// `seqtrain_client` is the blocking facade over the same actor.

#include "sprintrt/pool_interface.hpp"
#include "sprintrt/seqtrain_interface.hpp"

namespace sprintrt {

class sprint_runtime;

/// Spawns a scheduler in `rt`'s actor system that computes forwarded
/// sequences on `pool` (single-segment requests; at most
/// `options.max_in_flight` at once, 0: the pool's capacity).
///
/// Lifetime: the handle is an ordinary CAF handle, copyable and valid while
/// the scheduler runs, which is until the first of: `stop_seqtrain_scheduler`
/// (or any exit message), the end of `pool`, or `rt.shutdown()`. Holding the
/// handle does not keep the pool alive. After the scheduler ended, requests
/// to the handle fail with CAF's `request_receiver_down`. Stopping it fails
/// a waiting train request with `cancelled` and discards what is being
/// computed; the pool and its workers stay. An invalid `pool` (e.g. one
/// asked for after `rt.shutdown()`) gives an invalid handle; one spawned
/// after `rt.shutdown()` over a pool of before is stopped at once.
seqtrain_scheduler_actor spawn_seqtrain_scheduler(sprint_runtime& rt, worker_pool_actor pool,
                                                  seqtrain_options options);

/// Stops `scheduler` (an exit message with `user_shutdown`); does not wait.
/// Stopping one that already ended does nothing.
void stop_seqtrain_scheduler(const seqtrain_scheduler_actor& scheduler);

} // namespace sprintrt
