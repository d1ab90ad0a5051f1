#pragma once

/// @file
/// Spawning the actor that owns one Sprint child (see `sprint_worker_actor`
/// for its messages).

#include <string>

#include <caf/fwd.hpp>

#include "sprintrt/options.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::process {
class io_thread;
} // namespace sprintrt::process

namespace sprintrt::detail {

/// Spawns a worker that starts a Sprint child for `opts` right away (spawn,
/// then the `init` handshake within `initTimeout`) and serves requests one at
/// a time. `name` labels its log lines and errors ("worker 2"). The io thread
/// must outlive the worker.
///
/// Failures: a child that dies, closes its pipe, breaks the protocol or does
/// not answer within `replyTimeout` is killed (if needed), reaped (or given
/// up on, if it has not exited 1 s after SIGKILL) and restarted with backoff; the request it was
/// serving is resent, up to `maxRetries` times, then fails with an error that names the segment,
/// how the child ended (exit status or signal) and the last lines of its output. A child that
/// cannot start fails the queued requests once `maxRetries` restarts did not help (at once if the
/// executable is missing).
sprint_worker_actor spawn_sprint_worker(caf::actor_system& system, process::io_thread& io,
                                        sprint_options opts, std::string name);

} // namespace sprintrt::detail
