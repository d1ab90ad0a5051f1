#pragma once

/// @file
/// sprintrt's own way into a `sprint_runtime`: the parts that only its
/// facades and actors use, kept out of the public class. Internal to the
/// actors library.

#include "actors/caller/actor_census.hpp"
#include "actors/caller/caller_actors.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt::detail {

/// What sprintrt reaches inside a runtime (a friend of `sprint_runtime`).
struct runtime_access {
  /// The blocking actors through which `pool_client` and `seqtrain_client`
  /// ask, one per calling thread.
  static caller_actors& callers(sprint_runtime& rt) noexcept;

  /// The actors `rt` made, which its `shutdown` stops and waits for
  /// (`spawn_seqtrain_scheduler` enlists in it).
  static actor_census& census(sprint_runtime& rt) noexcept;
};

} // namespace sprintrt::detail
