#pragma once

/// @file
/// The figures of a run: each one a benchmark's result next to its
/// baseline's (another benchmark of the same run, or a counter), how their
/// ratio is taken and the target it is held to. Declared by each benchmark
/// file next to the benchmarks they pair, and written into Google Benchmark's
/// context as the JSON array `figures`, which scripts/bench/figures.py turns
/// into the tables of BENCHMARKS.md and the smoke test checks.

#include <string>

namespace sprintrt::bench {

/// Adds a figure to the run's figures:
/// - `title`: what is measured, in a few words (the table's first column);
/// - `unit`: the unit both sides are shown in: a time unit (ns, us, ms, s),
///   a slash and what it is per ("us/segment"), or a counter's unit;
/// - `value`: the measured side: a benchmark's name (its real time, converted
///   to `unit`) or "name@counter" (a counter of that benchmark, in `unit`);
/// - `baseline`: what it is compared with, in the same form;
/// - `ratio`: "value/baseline" (a slowdown: 2 = twice the baseline's time)
///   or "baseline/value" (a speedup, or the fraction of a limit reached);
/// - `target`: e.g. "<= 1.5", ">= 5", "< 1"; empty when none is set;
/// - `on`: what the target applies to, "ratio" or "value" (its median);
/// - `python`: whether the figure needs Python (NumPy, PyTorch, the
///   module), and is skipped rather than failed without it.
void declare_figure(std::string title, std::string unit, std::string value, std::string baseline,
                    std::string ratio = "value/baseline", std::string target = "",
                    std::string on = "ratio", bool python = false);

/// Writes the figures declared so far into the benchmark context (key
/// "figures", a JSON array of objects with the fields of `figure`). Call
/// once, after every benchmark is registered and before they run.
void publish_figures();

} // namespace sprintrt::bench
