#pragma once

/// @file
/// `actor_census`: the actors one runtime made, so that its shutdown can stop
/// and wait for exactly those, in an actor system that also runs actors of
/// the program embedding it. Internal to the actors library.

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

namespace sprintrt::detail {

/// Counts the live actors enlisted in it. Thread-safe; held by a
/// `shared_ptr`, since the actors it counts report their end into it.
class actor_census : public std::enable_shared_from_this<actor_census> {
public:
  /// Counts `actor` until it terminates (at once if it already has). After
  /// `stop_all`, also sends it an exit: nothing made later outlives the
  /// runtime's shutdown.
  void enlist(const caf::strong_actor_ptr& actor);

  /// Sends every live enlisted actor an exit with `user_shutdown`, and every
  /// one enlisted from now on.
  void stop_all();

  /// Waits until every enlisted actor has terminated.
  void await_all_done();

  /// How many enlisted actors are alive.
  size_t alive() const;

private:
  void retire();

  mutable std::mutex mutex_;
  std::condition_variable all_done_;
  size_t alive_ = 0;
  /// `stop_all` ran.
  bool stopped_ = false;
  /// Weak: the census keeps no actor alive.
  std::vector<caf::actor_addr> members_;
};

} // namespace sprintrt::detail
