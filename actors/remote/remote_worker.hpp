#pragma once

/// @file
/// A worker that is a whole pool on another machine: a local actor that
/// speaks `sprint_worker_actor` to the trainer's pool and forwards each
/// segment to a remote pool (`sprintrt serve`) through CAF's middleman.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

/// A remote worker's state as its pool sees it (`worker_source::slot_state`),
/// written by the worker, read by the pool, on any threads.
class remote_slot {
public:
  /// Returns the current state.
  worker_slot_state get() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return state_;
  }

  /// Replaces the state.
  void set(worker_slot_state state) {
    std::lock_guard<std::mutex> guard{mutex_};
    state_ = std::move(state);
  }

private:
  mutable std::mutex mutex_;
  worker_slot_state state_;
};

/// How a remote worker connects and how long it waits.
struct remote_worker_settings {
  remote_endpoint endpoint;
  /// The trainer's `remote_options_key`, for the handshake.
  std::string options_key;
  /// TLS files (`remoteTls`; empty: plain TCP). The actor system must have
  /// been configured with the same ones (`sprint_runtime::settings::tls`).
  tls_files tls;
  /// How long one segment may take at the remote pool, queueing included.
  std::chrono::milliseconds reply_deadline{std::chrono::minutes{40}};
  /// How long connecting and the handshake may take.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds{10}};
  /// The first wait before connecting again; it doubles after each failure.
  std::chrono::milliseconds first_backoff{250};
  /// The longest wait before connecting again.
  std::chrono::milliseconds max_backoff{std::chrono::seconds{8}};
};

/// Spawns the worker for the remote pool at `settings.endpoint`, labelled
/// `name`; it reports its state into `slot`.
///
/// It connects at once (through the middleman's actor, or the OpenSSL
/// manager's with TLS, never blocking a thread), checks that a remote pool of this interface is
/// published there and says hello (interface version and options key), which answers with the
/// pool's number of workers: its parallelism. Until then it keeps the requests it gets. Connected,
/// it sends each request at once (the remote pool queues them) with the log-posteriors copied out
/// of the job's slice, and copies the returned error signal into the job's output through its gate.
/// When connecting fails or the connection is lost, its slot becomes unavailable (with the reason),
/// every request it holds or gets fails with `worker_unavailable` (the pool sends them elsewhere),
/// and it connects again after a backoff (`first_backoff`, doubling up to `max_backoff`). Errors of
/// the remote pool (a Sprint exception, ...) come back as they are, prefixed with the endpoint.
sprint_worker_actor spawn_remote_worker(caf::actor_system& system, remote_worker_settings settings,
                                        std::shared_ptr<remote_slot> slot, std::string name);

} // namespace sprintrt::detail
