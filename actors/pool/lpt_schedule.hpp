#pragma once

/// @file
/// Longest processing time first (LPT): the original's greedy scheduler for
/// spreading a batch's segments over Sprint workers.
///
/// Segments are taken longest first and each goes to the worker with the
/// least work so far (frames already assigned, plus what the worker still
/// has queued from other requests). Ties go to the lower worker index, and
/// equally long segments keep their batch order, exactly as RETURNN's
/// `sorted(..., reverse=True)` + `min(enumerate(joblen))` did. LPT's makespan
/// is at most 4/3 of the optimum.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/span.hpp"

namespace sprintrt::detail {

/// Assigns segments of `lengths` (frames) to `initial_loads.size()` workers
/// whose queues already hold `initial_loads` frames. Returns, per worker, the
/// indices of its segments in the order they should be sent (longest first).
/// `initial_loads` must not be empty.
std::vector<std::vector<size_t>> lpt_assign(span<const int64_t> lengths,
                                            span<const int64_t> initial_loads);

/// LPT over workers of different speeds: each segment, longest first, goes
/// to the worker that would finish it first, `(load + length) / rate`, with
/// `rates[w]` worker w's frames per unit of time (a remote pool of eight
/// workers has about eight times the rate of one local worker). Workers of
/// rate 0 get nothing; if every rate is 0, every list is empty. With equal
/// rates this is `lpt_assign` exactly. `rates` has one entry per load.
std::vector<std::vector<size_t>> lpt_assign(span<const int64_t> lengths,
                                            span<const int64_t> initial_loads,
                                            span<const double> rates);

} // namespace sprintrt::detail
