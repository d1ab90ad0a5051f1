#pragma once

/// @file
/// `sprintrt-bench remote`: large segments through a remote pool over
/// loopback against a plain TCP echo of the same bytes.

#include <CLI/CLI.hpp>

namespace sprintrt::bench {

/// Adds the `remote` subcommand.
void add_remote_bench(CLI::App& app);

} // namespace sprintrt::bench
