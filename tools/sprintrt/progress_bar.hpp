#pragma once

/// @file
/// A one-line progress bar on stderr for long CLI work, drawn only when
/// stderr is a terminal (a log file or a pipe gets nothing).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <thread>

namespace sprintrt::cli {

/// Draws "label [#######-------]  45/100 segments  3.2 s" in place.
class progress_bar {
public:
  /// A bar for `total` items called `unit`; enabled if stderr is a
  /// terminal and `total >= min_total`.
  progress_bar(std::string label, size_t total, std::string unit, size_t min_total = 8);

  /// Ends the line if anything was drawn and end_line was not called.
  ~progress_bar();

  /// Returns whether the bar draws at all.
  bool enabled() const noexcept { return enabled_; }

  /// Redraws with `done` items done.
  void update(size_t done);

  /// Redraws with every item done.
  void finish() { update(total_); }

  /// Ends the line if anything was drawn, so that whatever is printed next
  /// (a summary on stdout, to the same terminal) starts a line of its own;
  /// the bar draws nothing after it.
  void end_line();

private:
  std::string label_;
  size_t total_;
  std::string unit_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Updates a bar from a counter while one long blocking call runs: a thread
/// asks `count` (e.g. the pool's finished segments) five times a second.
/// Does nothing when the bar is disabled.
class progress_poller {
public:
  /// Starts polling `count` into `bar` (if the bar is enabled).
  progress_poller(progress_bar& bar, std::function<size_t()> count);

  /// Stops polling, draws the bar full and ends its line.
  ~progress_poller();

private:
  progress_bar& bar_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

} // namespace sprintrt::cli
