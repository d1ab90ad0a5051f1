#pragma once

/// @file
/// Reading a batch from the files `sprintrt loss` and `sprintrt automata`
/// take: log-posteriors and sequence lengths as .npy, tags as text.

#include <string>
#include <vector>

#include "sprintrt/batch.hpp"
#include "sprintrt/error.hpp"
#include "tools/sprintrt/npy_file.hpp"

namespace sprintrt::cli {

/// Reads segment tags, one per line. A trailing '\r' is removed and blank
/// lines at the end of the file are ignored; a blank line between tags is an
/// error naming the line (an empty tag cannot name a segment).
caf::expected<std::vector<std::string>> read_tags(const std::string& path);

/// Reads log-posteriors: a float32 array as it is, a float64 one converted
/// to float32 (as the Python module converts it; logged at info level). Any
/// other dtype is an error naming the file.
caf::expected<cli::npy_typed_array<float>> read_log_posteriors(const std::string& path);

/// Reads a batch: `log_posteriors` float32 or float64 [T, B, D], `seq_lengths` int32 or
/// int64 [B], `tags` B lines. Shapes are checked against each other here;
/// values (lengths in range, NaN) by the pool.
caf::expected<batch> read_batch(const std::string& log_posteriors, const std::string& seq_lengths,
                                const std::string& tags);

} // namespace sprintrt::cli
