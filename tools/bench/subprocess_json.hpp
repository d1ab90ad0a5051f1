#pragma once

/// @file
/// Running another program from a bench and reading the one JSON document it
/// prints: the Python comparison scripts (scripts/bench/*.py) and this
/// program itself in a fresh process (`sprintrt-bench --helper=large-rss`), so
/// that a peak RSS is not polluted by what the run did before.

#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

namespace sprintrt::bench {

/// What a program printed and how it ended.
struct program_output {
  /// Its exit status (-1 if it did not exit normally).
  int status = -1;
  /// Everything it wrote to stdout (stderr goes to ours).
  std::string out;
};

/// Runs `argv` (argv[0] is the executable's path; no shell) with stdin on
/// /dev/null and stdout captured, and waits for it. Throws
/// `std::runtime_error` if it cannot be started.
program_output run_program(const std::vector<std::string>& argv);

/// Parses the last non-empty line of `output.out` as JSON. Throws
/// `std::runtime_error` naming `what` if the program failed or printed no
/// JSON.
nlohmann::json json_of(const program_output& output, const std::string& what);

/// A comparison script's JSON document, or why there is none.
struct script_outcome {
  /// Not empty if the script did not run (no Python) or said
  /// it could not (its {"skipped": reason}, e.g. "no python3-numpy").
  std::string skipped;
  /// Its document when it ran.
  nlohmann::json result;
};

/// Runs `python script args...`; skipped (not an error) when `python` is
/// not an executable file ("no `needs` (no `python`)", `needs` being the
/// package the script imports, e.g. "python3-numpy") or the script prints
/// {"skipped": reason}. Throws `std::runtime_error` when the script fails
/// otherwise.
script_outcome run_script(const std::string& python, const std::string& needs,
                          const std::string& script, const std::vector<std::string>& args);

/// Reports `samples` (a JSON array of a script's timings, `unit` seconds
/// each) as the manual times of `state`'s iterations, one sample each.
void replay_samples(benchmark::State& state, const nlohmann::json& samples, double unit);

} // namespace sprintrt::bench
