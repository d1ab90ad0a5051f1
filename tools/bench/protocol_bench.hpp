#pragma once

/// @file
/// `sprintrt-bench protocol`: the throughput of the wire codec for a loss
/// request and its reply (encode; frame, unpickle, decode and copy out),
/// next to a plain memcpy of the same bytes.

#include <CLI/CLI.hpp>

namespace sprintrt::bench {

/// Adds the `protocol` subcommand to `app`.
void add_protocol_bench(CLI::App& app);

} // namespace sprintrt::bench
