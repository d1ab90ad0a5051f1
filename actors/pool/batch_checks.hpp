#pragma once

/// @file
/// Checking a batch before any of it is sent: a malformed batch is refused
/// as a whole, with an error that names what was wrong and where, instead
/// of failing halfway through on some worker.

#include <functional>
#include <string>
#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt {

/// What `check_batch` checks beyond its defaults, and how it names columns.
struct batch_check_rules {
  /// Also refuse frames whose log-posteriors are all -inf: no class has any
  /// probability, so the row cannot be normalized (the sequence-training
  /// scheduler computes exp(log-posteriors) of every frame).
  bool refuse_empty_rows = false;
  /// Names column i in errors; by default "segment i ('tag')".
  std::function<std::string(size_t)> column_name;
};

/// Checks the shapes of `b` (log-posteriors rank 3, B lengths, B tags), that
/// every length is in 1..T, that every tag is non-empty, and that the frames
/// in use hold no NaN and no +inf (-inf, probability zero, is valid).
/// Errors are `invalid_input` naming the batch index (and tag), the frame
/// and the class where it applies (columns named by `rules`).
caf::error check_batch(const batch& b, const batch_check_rules& rules = {});

/// Checks the tags of an automata request: at least one, none empty.
caf::error check_tags(const std::vector<std::string>& tags);

} // namespace sprintrt
