#pragma once

/// @file
/// Spawning the worker pool actor (see `worker_pool_actor` for its messages).

#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"

namespace sprintrt::runtime {
class io_thread;
} // namespace sprintrt::runtime

namespace sprintrt {

/// Spawns a pool for `opts`; `name` labels its workers ("pool 1 worker 2").
/// No child starts before the first request. An exit message stops the pool
/// and, through it, every worker (each sends `exit` to its child); requests
/// still waiting fail with `cancelled`. The io thread must outlive the pool
/// and its workers.
worker_pool_actor spawn_worker_pool(caf::actor_system& system, runtime::io_thread& io,
                                    sprint_options opts, std::string name);

} // namespace sprintrt
