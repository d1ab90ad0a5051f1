#pragma once

/// @file
/// An example of embedding sprintrt in an asynchronous training engine: the
/// engine's trainer is an event-based CAF actor in the engine's own actor
/// system; it never blocks a thread for sprintrt. It talks to a worker pool
/// (keeping several batches in flight) and to a sequence-training scheduler
/// through their typed actor interfaces, and answers its own messages:
///
/// - `(full_sum_atom) -> std::vector<float>`: computes every batch on the
///   pool, at most `max_in_flight` at once, and replies with each segment's
///   loss in batch order (batch 0's segments first).
/// - `(seqtrain_atom) -> std::vector<float>`: runs one epoch of sequence
///   training through the scheduler, forwarding batches ahead while the
///   scheduler has space, training them in order, and replies with each
///   batch's summed loss.
///
/// An error from sprintrt fails the running request with that error.

#include <cstddef>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/fwd.hpp>

#include <sprintrt/batch.hpp>
#include <sprintrt/pool_interface.hpp>
#include <sprintrt/seqtrain_interface.hpp>

namespace engine {

using full_sum_atom = caf::atom_constant<caf::atom("fullsum")>;
using seqtrain_atom = caf::atom_constant<caf::atom("seqtrain")>;

/// What the trainer works on.
struct trainer_setup {
  sprintrt::worker_pool_actor pool;
  sprintrt::seqtrain_scheduler_actor scheduler;
  /// The batches, time-major [T, B, D] as sprintrt takes them.
  std::vector<sprintrt::batch> batches;
  /// Pool batches in flight at once.
  size_t max_in_flight = 2;
};

/// Spawns the trainer in `system`, the engine's.
caf::actor spawn_trainer(caf::actor_system& system, trainer_setup setup);

} // namespace engine
