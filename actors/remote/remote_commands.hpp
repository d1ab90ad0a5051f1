#pragma once

/// @file
/// How each Sprint command travels to a pool on another machine and back:
/// what the remote pool is sent (a loss job's posteriors as bytes, since a
/// `segment_job` points into this process's memory), what it answers, and
/// how the answer becomes the command's reply. One entry per command of
/// `sprint_commands`, beside its `command_entry`. Internal to the actors
/// library.

#include <string>

#include <caf/expected.hpp>

#include "sprintrt/remote_interface.hpp"
#include "sprintrt/segment.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt {

/// How command `Command` travels to a remote pool; specialized for each of
/// `sprint_commands`.
template <class Command>
struct remote_entry;

template <>
struct remote_entry<get_loss_command> {
  using remote_work = remote_segment;
  using remote_reply = remote_loss;

  /// The job's log-posteriors, copied out of its slice.
  static remote_work to_remote(const segment_job& job);

  /// Writes a remote pool's error signal into the job's output (through its
  /// gate) and returns the loss. Errors: `invalid_message` for an error
  /// signal of the wrong shape, `cancelled` if the gate is closed.
  static caf::expected<double> from_remote(remote_reply& answer, const segment_job& job);
};

template <>
struct remote_entry<export_fsa_command> {
  using remote_work = fsa_query;
  using remote_reply = remote_fsa;

  static remote_work to_remote(const fsa_query& query) { return query; }

  static caf::expected<segment_fsa> from_remote(remote_reply& answer, const fsa_query&) {
    return std::move(answer.fsa);
  }
};

} // namespace sprintrt
