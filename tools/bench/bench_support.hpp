#pragma once

/// @file
/// What every sprintrt-bench subcommand shares: the common options (--repeat,
/// --json), timing a body over repeated runs, and printing results as a text
/// table or as JSON.

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace sprintrt::bench {

/// The options of every subcommand.
struct bench_options {
  /// Timed runs per measurement (after one untimed warm-up run).
  int repeat = 50;
  /// Print one JSON document instead of a table.
  bool json = false;
};

/// Adds --repeat and --json to a subcommand.
void add_common_options(CLI::App& command, bench_options& options);

/// The median and minimum duration of a body over repeated runs.
struct timing {
  double median_us = 0;
  double min_us = 0;
  int runs = 0;
};

/// Runs `body` once to warm up (caches, allocations of reusable workspaces),
/// then `repeat` times under a steady clock.
timing measure(int repeat, const std::function<void()>& body);

/// One column of a text report: the key in each result row, its header and
/// its width.
struct column {
  std::string key;
  std::string header;
  int width;
};

/// Prints `rows` (one JSON object per measurement) for the subcommand `name`:
/// with --json as {"bench": name, "repeat": N, "results": rows}, otherwise
/// `title` and a table of `columns`.
void report(const bench_options& options, const std::string& name, const std::string& title,
            const std::vector<column>& columns, const std::vector<nlohmann::json>& rows);

} // namespace sprintrt::bench
