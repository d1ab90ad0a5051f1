#include "tools/bench/bench_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sprintrt::bench {

void add_common_options(CLI::App& command, bench_options& options) {
  command.add_option("--repeat", options.repeat, "timed runs per measurement (median reported)")
      ->check(CLI::Range(1, 1000000));
  command.add_flag("--json", options.json, "print one JSON document instead of a table");
}

timing measure(int repeat, const std::function<void()>& body) {
  body();
  std::vector<double> durations;
  durations.reserve(repeat);
  for (int run = 0; run < repeat; ++run) {
    const auto start = std::chrono::steady_clock::now();
    body();
    durations.push_back(micros_since(start));
  }
  return summarize(std::move(durations));
}

timing summarize(std::vector<double> samples_us) {
  if (samples_us.empty())
    return {};
  std::sort(samples_us.begin(), samples_us.end());
  const size_t n = samples_us.size();
  const double median =
      n % 2 == 1 ? samples_us[n / 2] : (samples_us[n / 2 - 1] + samples_us[n / 2]) / 2;
  return {median, samples_us.front(), static_cast<int>(n), samples_us.back()};
}

double micros_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

double megabytes_per_second(double bytes, double us) {
  return us > 0 ? bytes / us : 0.0;
}

std::string machine_load() {
  std::ifstream in{"/proc/loadavg"};
  double one = 0, five = 0, fifteen = 0;
  in >> one >> five >> fifteen;
  return std::to_string(std::thread::hardware_concurrency()) + " CPUs, load average " +
         format_fixed(one, 2) + " / " + format_fixed(five, 2) + " / " + format_fixed(fifteen, 2) +
         " (1/5/15 min)";
}

std::string format_fixed(double x, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << x;
  return out.str();
}

namespace {

std::string cell(const nlohmann::json& value) {
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_number_float()) {
    // Three significant digits for small values (sub-microsecond times),
    // else two or one decimals.
    const double x = value.get<double>();
    const double magnitude = std::abs(x);
    const int digits = magnitude < 1 ? 3 : magnitude < 100 ? 2 : 1;
    return format_fixed(x, digits);
  }
  return value.dump();
}

void print_table(const std::string& title, const std::vector<column>& columns,
                 const std::vector<nlohmann::json>& rows) {
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

} // namespace

void report(const bench_options& options, const std::string& name, const std::string& title,
            const std::vector<column>& columns, const std::vector<nlohmann::json>& rows) {
  if (options.json) {
    const nlohmann::json document = {
        {"bench", name}, {"repeat", options.repeat}, {"results", rows}};
    std::cout << document.dump(2) << '\n';
    return;
  }
  print_table(title, columns, rows);
}

void report(const bench_options& options, const std::string& name,
            const std::vector<section>& sections) {
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : sections)
      list.push_back(
          {{"name", s.name}, {"title", s.title}, {"results", s.rows}, {"notes", s.notes}});
    const nlohmann::json document = {
        {"bench", name}, {"repeat", options.repeat}, {"sections", list}};
    std::cout << document.dump(2) << '\n';
    return;
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    if (i > 0)
      std::cout << '\n';
    print_table(sections[i].title, sections[i].columns, sections[i].rows);
    for (const auto& note : sections[i].notes)
      std::cout << "  " << note << '\n';
  }
  std::cout << std::flush;
}

void write_fully(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::write(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      throw std::runtime_error(what + ": write: " + std::strerror(errno));
    data += k;
    n -= static_cast<size_t>(k);
  }
}

bool read_fully(int fd, char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::read(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      throw std::runtime_error(what + ": read: " + std::strerror(errno));
    if (k == 0)
      return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

} // namespace sprintrt::bench
