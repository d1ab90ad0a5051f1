#pragma once

/// @file
/// The Python module's one runtime per process, and its end. Python keeps
/// binding objects (pools in `SprintInstancePool.global_instances`) until the
/// interpreter ends, and other threads may still wait in a call then; yet no
/// actor handle may outlive its actor system, and destroying the system with
/// the other statics crashes in CAF's destructors. So `shutdown` (at
/// interpreter exit) detaches every object holding handles, stops the pools
/// so that waiting calls return, waits for them, and only then destroys the
/// runtime.
///
/// A forked child (os.fork, a DataLoader worker) inherits the runtime's
/// memory but none of its threads, and the parent's Sprint children are not
/// its children: it abandons that runtime (never stops, destroys or calls
/// it) and makes a runtime of its own with its next pool (at_fork.hpp).

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <type_traits>

#include "binding_support.hpp"
#include "signal_stop.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt {
class sprint_runtime;
} // namespace sprintrt

namespace sprintrt::python {

/// The process's runtime, made with the first pool's settings (CAF sets TLS
/// up once per process). After `shutdown_process_runtime`, throws
/// `sprintrt.Error` (`cancelled`) saying that `what` cannot be made.
sprint_runtime& process_runtime(const sprint_options& opts, const char* what);

/// Stops every pool, scheduler and child of this process: refuses new
/// calls, detaches every `runtime_user`, stops the pools (calls waiting on
/// other threads then fail with `cancelled`), waits up to 10 s for those
/// calls to return, then destroys the runtime (or leaves it, stopped, if
/// some call never returned). Called with the GIL held; releases it while
/// waiting. Idempotent: a second call, from any thread, returns once the
/// first is done.
void shutdown_process_runtime();

/// A binding object that holds actor handles of the process's runtime, and
/// lets go of them at shutdown. Made and destroyed with the GIL held.
class runtime_user {
public:
  /// Registers the object for `shutdown_process_runtime`.
  runtime_user();

  /// Unregisters it.
  virtual ~runtime_user();

  runtime_user(const runtime_user&) = delete;
  runtime_user& operator=(const runtime_user&) = delete;

  /// Drops every actor handle (with the GIL held); calls after it raise
  /// `sprintrt.Error`.
  virtual void detach() = 0;

  /// Lets go of the handles in a forked child, where the runtime they
  /// belong to has no threads: no CAF code may run for them, so no actor of
  /// theirs may lose its last reference here. Calls after it raise
  /// `sprintrt.Error` naming the parent process. The default, `detach`, is
  /// right for a user whose actors the abandoned runtime also references
  /// (its registry keeps every pool made from options, and an abandoned
  /// runtime is never destroyed: dropping the handles only decrements
  /// counts that stay above zero). A user holding the only handle of an
  /// actor overrides this and keeps its handles forever (`keep_forever`).
  virtual void abandon() { detach(); }
};

/// Keeps `handles` (a facade, actor handles) alive until the process ends,
/// never releasing them: for a forked child's `runtime_user::abandon`,
/// where releasing an actor's last reference would run CAF code of a
/// runtime without threads. Reachable from a static, so leak checkers do
/// not report it.
void keep_forever(std::shared_ptr<const void> handles);

/// Throws `sprintrt.Error` saying why `what` (a detached binding object)
/// cannot be used: the runtime was shut down (`cancelled`), or, in a forked
/// child before any shutdown there, it belongs to the parent process
/// (`invalid_request`).
[[noreturn]] void raise_shut_down(const char* what);

/// Takes the locks that a forked child needs (the runtime's, the count of
/// calls in flight), so that no other thread holds one at the fork. For
/// `pthread_atfork`'s prepare handler: with the GIL held by the forking
/// thread, and no holder of these locks waits for the GIL.
void lock_runtime_for_fork() noexcept;

/// Releases the locks of `lock_runtime_for_fork` in the parent.
void unlock_runtime_after_fork() noexcept;

/// In a forked child, right after the fork (the only thread): releases the
/// locks, abandons the inherited runtime and abandons every
/// `runtime_user`, so that the next pool makes a runtime of this process.
/// Calls in flight in the parent are not counted here.
void abandon_runtime_in_child() noexcept;

/// A call that waits for the runtime without the GIL, counted so that
/// shutdown waits for it. Made with the GIL held, before releasing it.
class call_in_flight {
public:
  /// Counts the call; throws `sprintrt.Error` (`cancelled`) saying that
  /// `what` cannot be used once shutdown has begun.
  explicit call_in_flight(const char* what);

  /// Ends it, if `end` did not.
  ~call_in_flight();

  call_in_flight(const call_in_flight&) = delete;
  call_in_flight& operator=(const call_in_flight&) = delete;

  /// Ends the call: from now on shutdown may destroy the runtime.
  void end() noexcept;

private:
  bool ended_ = false;
};

/// Releases the Python objects C++ let go of when it goes out of scope.
struct release_deferred_objects_at_exit {
  ~release_deferred_objects_at_exit() { release_deferred_objects(); }
};

/// Calls `f(*facade, stop)` without the GIL, as a call in flight, and
/// returns what it returns; `facade` is a binding object's member (`what`
/// names the object), which shutdown resets. Once counted, the call copies
/// the facade without running any Python code in between (no other thread
/// can shut down meanwhile), and drops its copy before the call ends.
/// Python objects C++ let go of are released before and after (and on an
/// exception). `stop` is a `signal_stop`'s token: a signal handler that
/// raised (Ctrl-C) during the call stops it, and its exception is raised
/// here once the call returned; with `interrupted`, what the stopped call
/// returned is left there for the caller's handler of that exception (and
/// nothing, when no handler raised).
template <class Facade, class F>
std::invoke_result_t<F, Facade&, const stop_token&> call_without_gil(
    const std::shared_ptr<Facade>& facade, const char* what, F&& f,
    std::optional<std::invoke_result_t<F, Facade&, const stop_token&>>* interrupted = nullptr) {
  release_deferred_objects(); // may run Python code: before counting
  release_deferred_objects_at_exit release_after;
  signal_stop interrupt;
  call_in_flight call{what};
  if (!facade)
    raise_shut_down(what);
  auto kept = facade;
  std::optional<std::invoke_result_t<F, Facade&, const stop_token&>> result;
  {
    pybind11::gil_scoped_release released;
    result.emplace(f(*kept, interrupt.token()));
    kept.reset();
    call.end();
  }
  if (interrupted && interrupt.interrupted())
    *interrupted = std::move(result);
  interrupt.raise_if_interrupted();
  return std::move(*result);
}

} // namespace sprintrt::python
