#pragma once

/// @file
/// The figures of `sprintrt-bench all` (the issues' lists: a-f, issue 10; g, issue 13): each one a
/// measurement over repeats (median, min, max) next to its baseline measured
/// in the same run, their ratio, and the target the ratio (or the value) is
/// held to, with "met" or "missed". Printed as a table, as JSON (`--json`) or
/// as markdown rows for BENCHMARKS.md (`--markdown`).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sprintrt::bench {

/// The median, minimum and maximum of samples (in a figure's unit).
struct spread {
  double median = 0;
  double min = 0;
  double max = 0;
  int runs = 0;
};

/// Summarizes `samples` (at least one).
spread spread_of(std::vector<double> samples);

/// Returns `s` with every sample scaled by `factor` (a unit change).
spread scaled(const spread& s, double factor);

/// Which way a figure's ratio is taken.
enum class ratio_kind {
  /// value / baseline: a slowdown against the baseline (1 = as fast).
  value_over_baseline,
  /// baseline / value: a speedup over the baseline (or the fraction of a
  /// limit reached).
  baseline_over_value,
};

/// What a figure is held to.
struct target {
  /// "<=", ">=", "<" or "" (the issue sets no target: "n/a").
  std::string op;
  double bound = 0;
  /// Whether the bound applies to the ratio (else to the value's median).
  bool on_ratio = true;
  /// How the target reads in the tables, e.g. "<= 1.5x echo".
  std::string text;
};

/// One figure.
struct figure {
  /// "a", "b", ..., "d.transport": the key the smoke test looks for.
  std::string id;
  /// What is measured, in a few words.
  std::string title;
  /// The unit of the value and the baseline, e.g. "us/segment".
  std::string unit;
  std::optional<spread> value;
  /// What the value is compared with, measured in the same run.
  std::string baseline_name;
  std::optional<spread> baseline;
  ratio_kind kind = ratio_kind::value_over_baseline;
  /// How the ratio reads in the tables after its number: "x" for a
  /// slowdown, "x faster" for a speedup by default; e.g. " of the limit".
  std::string ratio_suffix;
  target goal;
  /// Why the figure was not measured (e.g. "no python3-numpy"); empty when
  /// it was.
  std::string skipped;
  /// Further details (sizes, counters) for the JSON document.
  nlohmann::json details = nlohmann::json::object();
  /// Lines printed under the table.
  std::vector<std::string> notes;

  /// value.median / baseline.median or the inverse (see `kind`); NaN when
  /// either is missing.
  double ratio() const;
  /// The same from the minima: steadier on a busy machine.
  double ratio_of_minima() const;
  /// "met", "missed", "n/a" (no target) or "skipped".
  std::string status() const;
};

/// A figure that could not be measured, with the reason.
figure skipped_figure(std::string id, std::string title, std::string unit,
                      std::string baseline_name, target goal, std::string reason);

/// How `print_figures` prints.
struct figure_output {
  bool json = false;
  bool markdown = false;
  bool quick = false;
  /// Also write the JSON document to this file (if not empty).
  std::string json_file;
};

/// Prints `figures` with `notes` (machine load, sizes): a table and the
/// notes; with `json` one document {"bench": "all", "quick", "figures": [...],
/// "notes": [...]}; with `markdown` the rows of BENCHMARKS.md's table. Throws
/// `std::runtime_error` if `json_file` cannot be written.
void print_figures(const figure_output& out, const std::vector<figure>& figures,
                   const std::vector<std::string>& notes);

/// Returns `f` as JSON: id, title, unit, median, min, max, runs, baseline
/// {name, median, min, max, runs}, ratio, ratio_is, ratio_of_minima, target
/// {op, bound, on, text}, status, skipped, details (absent numbers are null).
nlohmann::json to_json(const figure& f);

} // namespace sprintrt::bench
