#pragma once

/// @file
/// The state one run shares: its settings, one sprint_runtime, the pipe
/// echoes, a worker without a pool, and rigs (pools, batches, corpora) that
/// every repetition reuses, so that a child starts once per run. Destroyed
/// after the run: every child stopped and reaped, every file removed.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/io_thread.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/worker_interface.hpp"
#include "tools/bench/pipe_echo.hpp"

namespace sprintrt::bench {

/// The run's settings, from sprintrt-bench's own flags (main.cpp).
struct bench_settings {
  bool quick = false;                      ///< smaller shapes and counts
  std::string sprint_sim;                  ///< the sprint-sim executable
  std::string python = "/usr/bin/python3"; ///< the comparison scripts' Python
  std::string scripts;                     ///< the comparison scripts' directory
  std::string python_module;               ///< the directory of the package sprintrt
  std::string self;                        ///< this program, for its helpers
};

/// The shared state of one run (see the file comment).
class bench_world {
public:
  /// Keeps `settings`; starts nothing yet.
  explicit bench_world(bench_settings settings);

  /// Stops (see `stop`).
  ~bench_world();

  bench_world(const bench_world&) = delete;
  bench_world& operator=(const bench_world&) = delete;

  /// Returns the settings.
  const bench_settings& settings() const noexcept { return settings_; }

  /// Returns the runtime, started on first use (2 scheduler threads).
  sprint_runtime& runtime();

  /// Returns the echo child of `kind`, started on first use.
  pipe_echo& echo(echo_kind kind);

  /// Returns a sprint worker for `opts` without a pool, on an io thread of
  /// its own (started on first use; later calls' `opts` are ignored).
  const sprint_worker_actor& direct_worker(const sprint_options& opts);

  /// Returns the rig under `key`, made by `make()` (a `std::unique_ptr<T>`)
  /// on first use; rigs die in reverse order, before the runtime stops.
  template <class T, class Make>
  T& rig(const std::string& key, Make&& make) {
    auto& slot = rigs_[key];
    if (!slot) {
      slot = std::shared_ptr<T>{make()};
      order_.push_back(key);
    }
    return *static_cast<T*>(slot.get());
  }

  /// Destroys the rigs, stops the worker, the runtime and the echoes (every
  /// child reaped). Idempotent.
  void stop();

private:
  bench_settings settings_;
  std::unique_ptr<pipe_echo> echoes_[2];
  // Declared before the runtime: destroyed after it has awaited the worker.
  std::unique_ptr<runtime::io_thread> worker_io_;
  std::unique_ptr<sprint_runtime> runtime_;
  sprint_worker_actor worker_;
  std::map<std::string, std::shared_ptr<void>> rigs_;
  std::vector<std::string> order_;
};

/// Returns the run's world (main's, while it runs the benchmarks).
bench_world& world();

/// Makes `w` the run's world (nullptr: none).
void set_world(bench_world* w);

} // namespace sprintrt::bench
