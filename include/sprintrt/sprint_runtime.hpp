#pragma once

/// @file
/// The entry point for embedding sprintrt: a runtime that owns the io thread
/// for the Sprint children's pipes and the registry of worker pools, runs
/// its actors in an actor system of its own or in the embedding program's,
/// and shuts all of them down cleanly.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/pool_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace spdlog {
class logger;
} // namespace spdlog

namespace sprintrt {

namespace detail {
struct runtime_access;
} // namespace detail

/// Owns everything sprintrt runs: create one per process (or per trainer),
/// get pools from it, destroy it (or call `shutdown`) at the end. Every
/// Sprint child is then stopped (`exit`, then killed after its exitGrace)
/// and reaped, and every descriptor closed.
///
/// Its actors (pools, workers, schedulers) run in an actor system of its own
/// (the first constructors) or in one the embedding program owns (the
/// constructor taking a `caf::actor_system&`); either way the Sprint
/// children's pipes are served by an io thread of the runtime's own, never
/// by an actor thread. See docs/embedding.md.
class sprint_runtime {
public:
  /// Settings of the runtime itself (pools have their own options).
  struct settings {
    // The first three configure the runtime's own actor system; a runtime
    // on the program's system leaves that system as the program made it.
    /// CAF scheduler threads. CAF's default is max(4, cores); on small
    /// machines 2 is as fast and leaves the cores to the trainer and Sprint.
    size_t scheduler_threads = 2;
    /// CAF's scheduling policy: `true` for a shared queue, `false` for CAF's
    /// default work stealing. sprintrt's actors mostly wait for the io
    /// thread, and an idle work-stealing thread only notices new messages
    /// after its next sleep ends: a shared queue wakes it at once, which
    /// matters most for small segments' round trips.
    /// sprintrt's shared queue wakes a second thread only when there is
    /// work for two (short handlers pass messages on without a thread
    /// hand-off; see actors/execution/affine_sharing.hpp).
    bool shared_queue = true;
    /// TLS for remote pools: this process's certificate, key and CA (all
    /// empty: none). CAF 0.17 sets TLS up once per actor system, so a pool
    /// whose options ask for `remoteTls` works only in a runtime made with
    /// the same files (`runtime_settings_for`).
    tls_files tls;
    /// Where sprintrt's log records go from now on, process-wide (see
    /// `sprintrt/logging.hpp`): when set, the constructor installs it with
    /// `set_logger`. Null: keep the current one (stderr by default).
    std::shared_ptr<spdlog::logger> logger;
  };

  /// Starts the actor system and the io thread.
  sprint_runtime();

  /// Starts the actor system and the io thread with `config`.
  explicit sprint_runtime(const settings& config);

  /// Runs sprintrt's actors in `system`, the embedding program's, and starts
  /// the io thread; of `config` only `logger` applies. `system` must outlive
  /// this runtime; it may go on running after it. Remote pools need
  /// `system`'s config to have loaded `caf::io::middleman` and the types of
  /// `add_remote_message_types` (TLS: `caf::openssl::manager` with the
  /// files of `remoteTls`); without them such a pool refuses every request
  /// with `invalid_options`, saying so.
  sprint_runtime(caf::actor_system& system, const settings& config);

  /// Runs sprintrt's actors in `system`, with the default settings.
  explicit sprint_runtime(caf::actor_system& system);

  /// Shuts down (see `shutdown`).
  ~sprint_runtime();

  sprint_runtime(const sprint_runtime&) = delete;
  sprint_runtime& operator=(const sprint_runtime&) = delete;

  /// Returns the actor system sprintrt's actors run in: its own, or the one
  /// it was given.
  caf::actor_system& system() noexcept;

  /// Whether the actor system is the runtime's own (and ends with it).
  bool owns_system() const noexcept;

  /// Returns the pool for `opts`: the same pool for equal options (like
  /// RETURNN's `SprintInstancePool.get_global_instance`). Thread-safe. After
  /// `shutdown`, an invalid handle (no actor is made that nobody would
  /// stop); `pool_client` calls through it fail with `cancelled`.
  worker_pool_actor pool(const sprint_options& opts);

  /// Returns a new pool of its own (not shared through the registry) whose
  /// workers come from `source`, e.g. `sim_worker_source(opts)`; `name`
  /// labels it in logs ("pool 3" when empty). It stops at `shutdown`.
  /// Thread-safe. After `shutdown`, an invalid handle, as above.
  worker_pool_actor pool(worker_source source, std::string name = {});

  /// Returns the default source for `opts`: Sprint child processes started
  /// from the options, `numInstances` of them, on this runtime's io thread
  /// (so use it for pools of this runtime only, while it lives).
  worker_source child_process_source(const sprint_options& opts);

  /// Stops every pool and worker (and so the schedulers over them) without
  /// waiting: blocking calls that wait for them on other threads return
  /// with an error, after which `shutdown` may run. Idempotent; no pool is
  /// made after it.
  void stop_pools();

  /// Stops every pool, worker and scheduler this runtime made and waits
  /// until they are done; then stops the io thread, which kills and reaps
  /// any child still running. Requests in flight are answered with an error
  /// (`cancelled`, or CAF's `request_receiver_down` for one that reached a
  /// stopped actor). On the program's actor system it waits for nothing
  /// else: the program's actors go on. On its own system it then waits for
  /// every actor in it, so a program that spawned actors into `system()`
  /// must stop them first. Idempotent. Blocking calls on other threads must
  /// have returned first (`stop_pools` makes them return).
  void shutdown();

private:
  // sprintrt's facades and actors reach the runtime's callers and census
  // through it (actors/caller/runtime_access.hpp).
  friend struct detail::runtime_access;

  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The default settings, with the TLS files of `opts.remoteTls`: for a
/// runtime made for one options value (as the `sprintrt` tool does).
sprint_runtime::settings runtime_settings_for(const sprint_options& opts);

} // namespace sprintrt
