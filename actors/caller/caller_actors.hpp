#pragma once

/// @file
/// `caller_actors`: one blocking actor per calling thread, kept for the
/// runtime's lifetime, through which the blocking facades ask. Internal to
/// the actors library.
///
/// A scoped actor made per call is cheap to create, but destroying it
/// cancels its timeouts, which wakes CAF's clock thread, and that wake-up
/// competes for a core at the moment the next request is sent: a sizeable
/// part of a tiny segment's round trip (BENCHMARKS.md, "Figures behind the
/// design"). A thread's
/// actor answers one call at a time (the thread waits in it), so keeping it
/// is safe; hidden actors do not hold up the actor system's shutdown, and
/// `clear` destroys them before the system goes.

#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <caf/fwd.hpp>

namespace sprintrt::detail {

/// The blocking actors of the threads that call one runtime's facades.
class caller_actors {
public:
  /// Actors of `system`.
  explicit caller_actors(caf::actor_system& system);

  /// Destroys the actors (see `clear`).
  ~caller_actors();

  caller_actors(const caller_actors&) = delete;
  caller_actors& operator=(const caller_actors&) = delete;

  /// The calling thread's actor, made on its first call. Only that thread
  /// may use it, one request at a time. Thread-safe.
  caf::blocking_actor& of_this_thread();

  /// Destroys every actor; no thread may be in a call. Later calls make new
  /// ones.
  void clear();

  /// How many threads have an actor (for tests).
  size_t size() const;

private:
  caf::actor_system* system_;
  mutable std::mutex mutex_;
  std::unordered_map<std::thread::id, std::unique_ptr<caf::scoped_actor>> actors_;
};

} // namespace sprintrt::detail
