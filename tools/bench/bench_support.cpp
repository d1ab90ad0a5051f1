#include "tools/bench/bench_support.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace sprintrt::bench {

void add_common_options(CLI::App& command, bench_options& options) {
  command.add_option("--repeat", options.repeat, "timed runs per measurement (median reported)")
      ->check(CLI::Range(1, 1000000));
  command.add_flag("--json", options.json, "print one JSON document instead of a table");
}

timing measure(int repeat, const std::function<void()>& body) {
  using clock = std::chrono::steady_clock;
  body();
  std::vector<double> durations;
  durations.reserve(repeat);
  for (int run = 0; run < repeat; ++run) {
    const auto start = clock::now();
    body();
    durations.push_back(std::chrono::duration<double, std::micro>(clock::now() - start).count());
  }
  std::sort(durations.begin(), durations.end());
  const size_t n = durations.size();
  const double median =
      n % 2 == 1 ? durations[n / 2] : (durations[n / 2 - 1] + durations[n / 2]) / 2;
  return {median, durations.front(), repeat};
}

namespace {

std::string cell(const nlohmann::json& value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_number_float()) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(value.get<double>() < 100 ? 2 : 1)
        << value.get<double>();
    return out.str();
  }
  return value.dump();
}

} // namespace

void report(const bench_options& options, const std::string& name, const std::string& title,
            const std::vector<column>& columns, const std::vector<nlohmann::json>& rows) {
  if (options.json) {
    const nlohmann::json document = {
        {"bench", name}, {"repeat", options.repeat}, {"results", rows}};
    std::cout << document.dump(2) << '\n';
    return;
  }
  std::cout << title << '\n';
  for (const auto& col : columns)
    std::cout << std::setw(col.width) << col.header;
  std::cout << '\n';
  for (const auto& row : rows) {
    for (const auto& col : columns)
      std::cout << std::setw(col.width) << cell(row.at(col.key));
    std::cout << '\n';
  }
}

} // namespace sprintrt::bench
