#pragma once

/// @file
/// Other programs a bench runs: the echo children of the baselines, the
/// Python comparison scripts (scripts/bench/*.py) and this program itself in
/// a fresh process (`--helper=...`, e.g. for a peak RSS no earlier benchmark
/// pollutes), whose last line is a JSON document.

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
  int to_child = -1;   ///< its stdin (-1 when that is /dev/null)
  int from_child = -1; ///< its stdout
};

/// Starts `argv` (no shell) with its stdout on a pipe and its stdin on
/// another if `piped_stdin`, else on /dev/null; both pipes at `pipe_size`
/// bytes if not 0 (best effort). Throws `std::runtime_error` on failure.
child_program spawn_program(const std::vector<std::string>& argv, bool piped_stdin = false,
                            int pipe_size = 0);

/// Waits for `pid`; returns its exit status, -1 if it did not exit normally.
int reap(pid_t pid);

/// Runs `argv` to its end; returns its last non-empty line parsed as a JSON
/// object. Throws `std::runtime_error` naming `what` if it failed or printed
/// none there.
nlohmann::json run_json(const std::vector<std::string>& argv, const std::string& what);

/// Runs `script` of the run's scripts directory with `args` and the run's
/// Python; returns its JSON document. Marks `state` skipped ("skipped: ...")
/// and returns nothing without that Python (`needs` names the package the
/// script imports) or when the script prints {"skipped": reason}.
std::optional<nlohmann::json> run_script(benchmark::State& state, const std::string& needs,
                                         const std::string& script,
                                         const std::vector<std::string>& args);

/// Reports `samples` (a script's timings, `unit` seconds each) as the
/// manual times of `state`'s iterations, one sample each.
void replay_samples(benchmark::State& state, const nlohmann::json& samples, double unit);

} // namespace sprintrt::bench
