#pragma once

/// @file
/// `sprintrt-bench seqtrain`: how much of the Sprint time the
/// sequence-training scheduler hides behind training. Epoch time against the
/// bound max(trainer time, Sprint time / workers), without look-ahead and at
/// the default forward delay, with in-process workers and sprint-sim
/// children.

#include <string>

#include <CLI/CLI.hpp>

namespace sprintrt::bench {

/// Adds the `seqtrain` subcommand to `app`; `argv0` helps find sprint-sim.
void add_seqtrain_bench(CLI::App& app, std::string argv0);

} // namespace sprintrt::bench
