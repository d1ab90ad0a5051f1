#pragma once

/// @file
/// One worker pool per distinct options value, shared by everyone who asks
/// with equal options: the original's `SprintInstancePool.get_global_instance`
/// (which keyed a class-level dict by the hashable options), as an object.

#include <map>
#include <mutex>
#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"

namespace sprintrt::runtime {
class io_thread;
} // namespace sprintrt::runtime

namespace sprintrt {

/// Maps options to pools, creating a pool the first time its options are
/// asked for. Safe to use from several threads.
class pool_registry {
public:
  /// Pools are spawned in `system`, their children run on `io`.
  pool_registry(caf::actor_system& system, runtime::io_thread& io) : system_(system), io_(io) {}

  /// Returns the pool for `opts` (the same pool for equal options).
  worker_pool_actor pool(const sprint_options& opts);

  /// Stops every pool (and so every worker and child); forgets them.
  void stop_all();

private:
  caf::actor_system& system_;
  runtime::io_thread& io_;
  mutable std::mutex mutex_;
  /// Keyed by the canonical JSON of the options: equal options, equal keys.
  std::map<std::string, worker_pool_actor> pools_;
};

} // namespace sprintrt
