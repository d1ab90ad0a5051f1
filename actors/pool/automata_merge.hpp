#pragma once

/// @file
/// Merging the automata of a batch's segments into one (docs/protocol.md
/// section 5), as RETURNN's `get_automata_for_batch` does: segment b's state
/// ids are shifted by the number of states of the segments before it, each
/// edge gets a fourth row with its segment index, and start_end_states lists
/// each segment's (shifted) start state 0 and final state num_states - 1.

#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/segment_fsa.hpp"

namespace sprintrt::detail {

/// Merges `automata` (one per segment, in batch order). Fails with
/// `invalid_message` if an automaton is inconsistent (edges not 3 * E values,
/// a state out of range, no states) or the total number of states does not
/// fit the uint32 state ids.
caf::expected<batch_automata> merge_automata(const std::vector<segment_fsa>& automata);

} // namespace sprintrt::detail
