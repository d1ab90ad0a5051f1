#include "tools/bench/figures.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <utility>

#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

spread spread_of(std::vector<double> samples) {
  const auto t = summarize(std::move(samples));
  return {t.median_us, t.min_us, t.max_us, t.runs};
}

spread scaled(const spread& s, double factor) {
  return {s.median * factor, s.min * factor, s.max * factor, s.runs};
}

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

double ratio_from(double value, double baseline, ratio_kind kind) {
  if (kind == ratio_kind::value_over_baseline)
    return baseline != 0 ? value / baseline : nan;
  return value != 0 ? baseline / value : nan;
}

// Three significant digits or so: sub-unit values with 3 decimals, then 2, 1.
std::string number(double x) {
  if (!std::isfinite(x))
    return "-";
  const double magnitude = std::abs(x);
  return format_fixed(x, magnitude == 0 ? 0 : magnitude < 1 ? 3 : magnitude < 100 ? 2 : 1);
}

nlohmann::json maybe(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

std::string median_with_range(const std::optional<spread>& s) {
  if (!s)
    return "-";
  return number(s->median) + " (" + number(s->min) + "-" + number(s->max) + ")";
}

std::string ratio_text(const figure& f, double r) {
  if (!std::isfinite(r))
    return "-";
  if (!f.ratio_suffix.empty())
    return number(r) + f.ratio_suffix;
  return number(r) + (f.kind == ratio_kind::value_over_baseline ? "x" : "x faster");
}

// The table's cells of one figure, in column order.
std::vector<std::string> cells(const figure& f) {
  return {f.id,
          f.title,
          f.value ? number(f.value->median) : "-",
          f.value ? number(f.value->min) : "-",
          f.value ? number(f.value->max) : "-",
          f.unit,
          f.baseline_name,
          f.baseline ? number(f.baseline->median) : "-",
          ratio_text(f, f.ratio()),
          number(f.ratio_of_minima()),
          f.goal.text.empty() ? "none" : f.goal.text,
          f.skipped.empty() ? f.status() : "skipped: " + f.skipped};
}

void print_table(const std::vector<figure>& figures) {
  const std::vector<std::string> headers{"id",    "figure",    "median",   "min",
                                         "max",   "unit",      "baseline", "baseline median",
                                         "ratio", "ratio_min", "target",   "status"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : figures)
    rows.push_back(cells(f));
  std::vector<size_t> widths(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = headers[c].size();
    for (const auto& row : rows)
      widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns left-aligned, numbers right-aligned.
      const bool text = c == 0 || c == 1 || c == 5 || c == 6 || c >= 10;
      const std::string pad(widths[c] - row[c].size(), ' ');
      std::cout << (c > 0 ? "  " : "") << (text ? row[c] + pad : pad + row[c]);
    }
    std::cout << '\n';
  };
  line(headers);
  for (const auto& row : rows)
    line(row);
}

void print_markdown(const std::vector<figure>& figures) {
  std::cout << "| id | figure | median (min-max) | unit | baseline: median (min-max) | ratio | "
               "ratio of minima | target | status |\n"
            << "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& f : figures)
    std::cout << "| " << f.id << " | " << f.title << " | " << median_with_range(f.value) << " | "
              << f.unit << " | " << f.baseline_name << ": " << median_with_range(f.baseline)
              << " | " << ratio_text(f, f.ratio()) << " | " << number(f.ratio_of_minima()) << " | "
              << (f.goal.text.empty() ? "none" : f.goal.text) << " | "
              << (f.skipped.empty() ? f.status() : "skipped: " + f.skipped) << " |\n";
}

} // namespace

double figure::ratio() const {
  if (!value || !baseline)
    return nan;
  return ratio_from(value->median, baseline->median, kind);
}

double figure::ratio_of_minima() const {
  if (!value || !baseline)
    return nan;
  return ratio_from(value->min, baseline->min, kind);
}

std::string figure::status() const {
  if (!skipped.empty())
    return "skipped";
  if (goal.op.empty())
    return "n/a";
  const double x = goal.on_ratio ? ratio() : (value ? value->median : nan);
  if (!std::isfinite(x))
    return "missed";
  const bool met = goal.op == "<="   ? x <= goal.bound
                   : goal.op == ">=" ? x >= goal.bound
                   : goal.op == "<"  ? x < goal.bound
                                     : x > goal.bound;
  return met ? "met" : "missed";
}

figure skipped_figure(std::string id, std::string title, std::string unit,
                      std::string baseline_name, target goal, std::string reason) {
  figure f;
  f.id = std::move(id);
  f.title = std::move(title);
  f.unit = std::move(unit);
  f.baseline_name = std::move(baseline_name);
  f.goal = std::move(goal);
  f.skipped = std::move(reason);
  return f;
}

nlohmann::json to_json(const figure& f) {
  auto numbers = [](const std::optional<spread>& s, nlohmann::json j) {
    j["median"] = s ? maybe(s->median) : nlohmann::json(nullptr);
    j["min"] = s ? maybe(s->min) : nlohmann::json(nullptr);
    j["max"] = s ? maybe(s->max) : nlohmann::json(nullptr);
    j["runs"] = s ? s->runs : 0;
    return j;
  };
  auto j = numbers(f.value, {{"id", f.id}, {"title", f.title}, {"unit", f.unit}});
  j["baseline"] = numbers(f.baseline, {{"name", f.baseline_name}});
  j["ratio"] = maybe(f.ratio());
  j["ratio_is"] =
      f.kind == ratio_kind::value_over_baseline ? "value / baseline" : "baseline / value";
  j["ratio_of_minima"] = maybe(f.ratio_of_minima());
  nlohmann::json goal = nlohmann::json::object();
  goal["op"] = f.goal.op;
  goal["bound"] = f.goal.op.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.goal.bound);
  goal["on"] = f.goal.on_ratio ? "ratio" : "value";
  goal["text"] = f.goal.text;
  j["target"] = goal;
  j["status"] = f.status();
  j["skipped"] = f.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.skipped);
  j["details"] = f.details;
  j["notes"] = f.notes;
  return j;
}

void print_figures(const figure_output& out, const std::vector<figure>& figures,
                   const std::vector<std::string>& notes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : figures)
    list.push_back(to_json(f));
  const nlohmann::json document{
      {"bench", "all"}, {"quick", out.quick}, {"figures", list}, {"notes", notes}};
  if (!out.json_file.empty()) {
    std::ofstream file{out.json_file};
    file << document.dump(2) << '\n';
    if (!file)
      throw std::runtime_error("cannot write " + out.json_file);
  }
  if (out.json) {
    std::cout << document.dump(2) << '\n';
    return;
  }
  if (out.markdown)
    print_markdown(figures);
  else
    print_table(figures);
  std::cout << '\n';
  for (const auto& f : figures)
    for (const auto& note : f.notes)
      std::cout << "  " << f.id << ": " << note << '\n';
  for (const auto& note : notes)
    std::cout << "  " << note << '\n';
  std::cout << std::flush;
}

} // namespace sprintrt::bench
