#pragma once

/// @file
/// Spawning the worker pool actor (see `worker_pool_actor` for its messages).

#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt {

/// Spawns a pool whose workers come from `source`: at most
/// `source.capacity` of them, each made when first needed; `name` labels
/// the pool and its workers ("pool 1 worker 2"). If `source.unavailable` is
/// set (or the source cannot make any worker), every request fails with it.
/// An exit message stops the pool and, through it, every worker; requests
/// still waiting or in progress fail with `cancelled`. Whatever the workers
/// need (for child processes: the io thread) must outlive them.
worker_pool_actor spawn_worker_pool(caf::actor_system& system, worker_source source,
                                    std::string name);

} // namespace sprintrt
