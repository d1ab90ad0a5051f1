#pragma once

/// @file
/// The worker's side of one request, apart from the actor mechanics:
/// checking a job before it is sent, turning the child's reply into the
/// result (the error signal copied into the job's output slice), and
/// describing how a child ended for error messages.

#include <string>

#include "protocol/pickle_value.hpp"
#include "runtime/sprint_channel.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/segment.hpp"

namespace sprintrt {

/// Checks that a job names a segment and that its slices are valid and of
/// the same shape. Errors are `invalid_input` naming the segment.
caf::error check_job(const segment_job& job);

/// Decodes the reply to a loss command for `job`, writes its error signal
/// into `job.error_signal` and returns the loss. Errors (nothing written):
/// `child_exception` for an exception reply, `invalid_message` for a reply
/// of the wrong form or shape.
caf::expected<double> store_loss_reply(const protocol::value& reply, const segment_job& job);

/// Decodes the reply to an FSA export into a `segment_fsa` (a copy: the
/// reply's arrays live in the message buffer).
caf::expected<segment_fsa> fsa_from_reply(const protocol::value& reply);

/// Describes how a child ended: the cause, pid, exit status or signal, and
/// the last 20 lines of its output.
std::string describe_down(const runtime::child_down& down);

} // namespace sprintrt
