#pragma once

/// @file
/// One worker pool per distinct options value, shared by everyone who asks
/// with equal options: the original's `SprintInstancePool.get_global_instance`
/// (which keyed a class-level dict by the hashable options), as an object.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

#include "actors/caller/actor_census.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::process {
class io_thread;
} // namespace sprintrt::process

namespace sprintrt::detail {

/// Maps options to pools, creating a pool the first time its options are
/// asked for. Safe to use from several threads.
class pool_registry {
public:
  /// Pools are spawned in `system`, their children run on `io`; every pool
  /// and every worker a pool makes is enlisted in `census`.
  pool_registry(caf::actor_system& system, process::io_thread& io,
                std::shared_ptr<detail::actor_census> census)
      : system_(system), io_(io), census_(std::move(census)) {}

  /// Returns the pool for `opts` (the same pool for equal options), whose
  /// workers are Sprint children (`child_process_source`).
  worker_pool_actor pool(const sprint_options& opts);

  /// Returns a new pool of its own whose workers come from `source`; `name`
  /// labels it ("pool N", numbered with the shared pools, when empty). The
  /// registry does not keep it alive: it lives while someone holds its
  /// handle (CAF ends an actor nobody can reach), or until `stop_all`.
  worker_pool_actor own_pool(worker_source source, std::string name);

  /// Stops every pool (and so every worker and child); forgets them. From
  /// then on `pool` and `own_pool` return invalid handles.
  void stop_all();

private:
  /// Spawns a pool over `source` (its workers enlisted) and enlists it.
  worker_pool_actor spawn_enlisted(worker_source source, std::string name);

  caf::actor_system& system_;
  process::io_thread& io_;
  std::shared_ptr<detail::actor_census> census_;
  mutable std::mutex mutex_;
  /// Keyed by the canonical JSON of the options: equal options, equal keys.
  std::map<std::string, worker_pool_actor> pools_;
  /// Pools made by `own_pool`, weakly: to stop them at the end without
  /// keeping those nobody uses any more alive until then.
  std::vector<caf::actor_addr> own_pools_;
  /// Pools made so far, for their default names.
  size_t created_ = 0;
  /// `stop_all` ran: no pool is made any more (under `mutex_`).
  bool stopped_ = false;
};

} // namespace sprintrt::detail
