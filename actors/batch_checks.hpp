#pragma once

/// @file
/// Checking a batch before any of it is sent: a malformed batch is refused
/// as a whole, with an error that names what was wrong and where, instead
/// of failing halfway through on some worker.

#include <string>
#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt {

/// Checks the shapes of `b` (log-posteriors rank 3, B lengths, B tags), that
/// every length is in 1..T, that every tag is non-empty, and that the frames
/// in use hold no NaN and no +inf (-inf, probability zero, is valid).
/// Errors are `invalid_input` naming the batch index (and tag), the frame
/// and the class where it applies.
caf::error check_batch(const batch& b);

/// Checks the tags of an automata request: at least one, none empty.
caf::error check_tags(const std::vector<std::string>& tags);

} // namespace sprintrt
