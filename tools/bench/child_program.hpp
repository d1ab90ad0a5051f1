#pragma once

/// @file
/// Other programs a bench runs: the echo children of the baselines, the
/// Python comparison scripts (scripts/bench/*.py) and this program itself in
/// a fresh process (`sprintrt-bench --helper=...`), whose one JSON document
/// the bench reads, so that e.g. a peak RSS is not polluted by what the run
/// did before.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

namespace sprintrt::bench {

/// A started program and our ends of its pipes.
struct child_program {
  pid_t pid = -1;
  /// Writes to its stdin (-1 when its stdin is /dev/null).
  int to_child = -1;
  /// Reads from its stdout.
  int from_child = -1;
};

/// Starts `argv` (argv[0] is the executable's path; no shell) with its
/// stdout on a fresh pipe, and its stdin on another if `piped_stdin`, else
/// on /dev/null; sets both pipes to `pipe_size` bytes if not 0 (best effort,
/// as the runtime: the limit may be lower for unprivileged users). Its
/// stderr is ours. Throws `std::runtime_error` if it cannot be started.
child_program spawn_program(const std::vector<std::string>& argv, bool piped_stdin = false,
                            int pipe_size = 0);

/// Waits for `pid` (retrying after signals); returns its exit status, -1 if
/// it did not exit normally.
int reap(pid_t pid);

/// Runs `argv` (see `spawn_program`) to its end; returns its stdout, parsed
/// as JSON from its last non-empty line. Throws `std::runtime_error` naming
/// `what` if it failed or printed no JSON object there.
nlohmann::json run_json(const std::vector<std::string>& argv, const std::string& what);

/// Runs the comparison script `script` of the run's scripts directory with
/// `args` and the run's Python; returns its JSON document. Marks `state`
/// skipped and returns nothing when that Python is not an executable file
/// ("no `needs` (no PYTHON)", `needs` being the package the script imports,
/// e.g. "python3-numpy") or the script prints {"skipped": reason}. Throws
/// `std::runtime_error` when the script fails otherwise.
std::optional<nlohmann::json> run_script(benchmark::State& state, const std::string& needs,
                                         const std::string& script,
                                         const std::vector<std::string>& args);

/// Reports `samples` (a JSON array of a script's timings, `unit` seconds
/// each) as the manual times of `state`'s iterations, one sample each.
void replay_samples(benchmark::State& state, const nlohmann::json& samples, double unit);

} // namespace sprintrt::bench
