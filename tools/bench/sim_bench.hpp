#pragma once

/// @file
/// `sprintrt-bench sim`: the per-segment cost of the simulated Sprint's
/// full-sum (loss plus error signal), the scaled pass next to the log-space
/// reference, and both next to a log_softmax+exp baseline.

#include <CLI/CLI.hpp>

namespace sprintrt::bench {

/// Adds the `sim` subcommand to `app`.
void add_sim_bench(CLI::App& app);

} // namespace sprintrt::bench
