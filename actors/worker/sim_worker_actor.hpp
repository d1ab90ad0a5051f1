#pragma once

/// @file
/// Spawning one in-process simulated Sprint worker (see
/// `sprintrt/sim_worker.hpp` for what it is and `sprint_worker_actor` for
/// its messages).

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "criterion/corpus.hpp"
#include "criterion/topology.hpp"
#include "protocol/messages.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::detail {

/// What every worker of one simulated source shares: the corpus (read once
/// per source), the topology, how `sprint-sim` would send the loss, and the
/// behavior.
struct sim_worker_setup {
  /// The corpus; each worker copies it into its own criterion.
  std::shared_ptr<const criterion::corpus> segments;
  /// Builds the segments' FSAs (immutable, so workers share it).
  std::shared_ptr<const criterion::topology> automaton_topology;
  /// A Python float (the loss as computed) or a numpy.float32 (the loss
  /// rounded to float), as `sprint-sim`'s `loss-type`.
  protocol::loss_encoding loss_encoding = protocol::loss_encoding::python_float;
  /// What loss requests compute, as `sprint-sim`'s `criterion` with its
  /// scales and (shared) denominator.
  sim::criterion_spec criterion;
  /// Delays and injected failures.
  sim_worker_behavior behavior;
  /// How many workers died of `behavior.die_at_request` so far: the one
  /// thing the workers change, from their own threads, so that
  /// `behavior.max_deaths` limits the deaths of the whole source.
  mutable std::atomic<size_t> deaths{0};
};

/// Spawns the simulated worker of slot `slot` (which seeds its delays),
/// labelled `name` in its errors ("sim worker 2").
///
/// Requests are served one at a time in arrival order: the request at the
/// head of the queue waits its delay (a delayed message to itself, never a
/// sleep), then is computed by the worker's own `sim::sprint_service` (what
/// `sprint-sim` answers with) straight from and into the job's slices, and
/// answered. What `sprint-sim` answers
/// with an `exception` reply fails with the code the Sprint worker reads in
/// that reply (`child_exception`, or `unknown_segment` for an unknown
/// segment), with the message
/// the real worker gives ("NAME: get_loss_and_error_signal of segment 'x':
/// ..."). `die_at_request` ends the worker with a `child_failed` reason:
/// the request that killed it is left to CAF (which answers it with
/// `request_receiver_down`, as any request to a terminated actor), and the
/// requests it had already taken from its mailbox get that same error.
sprint_worker_actor spawn_sim_worker(caf::actor_system& system,
                                     std::shared_ptr<const sim_worker_setup> setup, size_t slot,
                                     std::string name);

} // namespace sprintrt::detail
