#pragma once

/// @file
/// The figures of a run: a benchmark's result next to its baseline's, their
/// ratio and its target. Each family declares them next to its benchmarks;
/// they travel in the output's context (JSON array "figures"), from which
/// scripts/bench/figures.py makes BENCHMARKS.md's tables.

#include <string>

namespace sprintrt::bench {

/// Adds a figure: `title` says what is measured; `unit` is a time unit
/// (ns, us, ms, s) and what it is per ("us/segment"), or a counter's unit;
/// `value` and `baseline` are a benchmark's name (its real time) or
/// "name@counter"; `ratio` is "value/baseline" (a slowdown) or
/// "baseline/value" (a speedup, a fraction of a limit); `target` e.g.
/// "<= 1.5" or "" for none, held to `on` ("ratio" or "value"); `python`:
/// skipped, not failed, without Python.
void declare_figure(std::string title, std::string unit, std::string value, std::string baseline,
                    std::string ratio = "value/baseline", std::string target = "",
                    std::string on = "ratio", bool python = false);

/// Writes the figures into the benchmark context (key "figures"); call once
/// after registering every benchmark.
void publish_figures();

} // namespace sprintrt::bench
