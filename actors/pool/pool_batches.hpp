#pragma once

/// @file
/// The pool's batch requests: a batch's loss and error signal, and a batch's
/// merged automata. Internal to the actors library.

#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/pool/pool_state.hpp"
#include "sprintrt/batch.hpp"

namespace sprintrt::detail {

/// Starts a batch loss request: checks the batch, spreads its segments over
/// the workers and answers once every segment did.
caf::result<batch_result> compute_batch(pool_pointer self, batch& b);

/// Starts a batch automata request: exports every segment's FSA over the
/// workers and answers with their merge.
caf::result<batch_automata> compute_automata(pool_pointer self, std::vector<std::string>& tags);

} // namespace sprintrt::detail
