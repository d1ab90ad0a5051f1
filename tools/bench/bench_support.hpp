#pragma once

/// @file
/// What every sprintrt-bench subcommand shares: the common options (--repeat,
/// --json), timing a body over repeated runs, and printing results as a text
/// table or as JSON.

#include <chrono>
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

/// The median, minimum and maximum duration of a body over repeated runs.
struct timing {
  double median_us = 0;
  double min_us = 0;
  int runs = 0;
  double max_us = 0;
};

/// Runs `body` once to warm up (caches, allocations of reusable workspaces),
/// then `repeat` times under a steady clock.
timing measure(int repeat, const std::function<void()>& body);

/// The median, minimum and maximum of `samples_us` (durations in microseconds, at
/// least one), for benches that collect their own samples (e.g. interleaving
/// a measurement with its baseline run by run).
timing summarize(std::vector<double> samples_us);

/// Returns the microseconds since `start` on the steady clock.
double micros_since(std::chrono::steady_clock::time_point start);

/// Times `count` calls of `body` one by one, appending each duration (in
/// microseconds) to `samples`.
template <class Body>
void time_each(size_t count, std::vector<double>& samples, Body&& body) {
  for (size_t i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    samples.push_back(micros_since(start));
  }
}

/// Writes all `n` bytes at `data` to `fd` (retrying after signals); throws
/// `std::runtime_error` naming `what` and the system error otherwise.
void write_fully(int fd, const char* data, size_t n, const std::string& what);

/// Reads exactly `n` bytes from `fd` into `data`; returns false if the
/// stream ended first; throws `std::runtime_error` naming `what` on errors.
bool read_fully(int fd, char* data, size_t n, const std::string& what);

/// Returns the throughput of `bytes` moved in `us` microseconds, in MB/s
/// (10^6 bytes per second).
double megabytes_per_second(double bytes, double us);

/// Describes how busy the machine is, for a note under a report: the CPUs
/// online and the 1/5/15-minute load averages from /proc/loadavg.
std::string machine_load();

/// Formats `x` with `digits` decimals (for figures inside notes).
std::string format_fixed(double x, int digits);

/// Keeps the compiler from dropping work whose only effect is the memory
/// `p` points to (a memcpy into a buffer nobody reads, in a timing loop).
inline void keep_alive(const void* p) {
  asm volatile("" : : "g"(p) : "memory");
}

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

/// One table of a report with several tables.
struct section {
  /// The key of the table in --json output.
  std::string name;
  /// The line printed above the table.
  std::string title;
  std::vector<column> columns;
  /// One JSON object per row; every column's key must be in each.
  std::vector<nlohmann::json> rows;
  /// Lines printed under the table: what the figures include, how to read
  /// the ratios.
  std::vector<std::string> notes;
};

/// Prints several tables for the subcommand `name`: with --json as one
/// document {"bench": name, "repeat": N, "sections": [{"name", "title",
/// "results", "notes"}, ...]}, otherwise each title, table and notes, with a
/// blank line between tables.
void report(const bench_options& options, const std::string& name,
            const std::vector<section>& sections);

} // namespace sprintrt::bench
