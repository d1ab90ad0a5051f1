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

namespace sprintrt::detail {

/// How `check_batch` names columns.
struct batch_check_rules {
  /// Names column i in errors; by default "segment i ('tag')".
  std::function<std::string(size_t)> column_name;
};

/// Checks the shapes of `b` (log-posteriors rank 3, B lengths, B tags), that
/// every length is in 1..T, that every tag is non-empty, and that the frames
/// in use hold no NaN and no +inf (-inf, probability zero, is valid: a frame
/// whose every log-posterior is -inf leaves its segment without a path, a
/// result, not an error).
/// Errors are `invalid_input` naming the batch index (and tag), the frame
/// and the class where it applies (columns named by `rules`).
caf::error check_batch(const batch& b, const batch_check_rules& rules = {});

/// For an error about `count` entries (lengths, tags) given for a batch
/// whose log-posteriors are [T, B, D] = [`frames`, `batch_size`, D]: when
/// `count` is T and not B, the sentence that says the array looks
/// batch-major ("; log_posteriors ... did you pass a batch-major (B, T, D)
/// array? ..."); "" otherwise.
std::string batch_major_hint(size_t count, size_t frames, size_t batch_size);

/// Checks the tags of an automata request: at least one, none empty.
caf::error check_tags(const std::vector<std::string>& tags);

} // namespace sprintrt::detail
