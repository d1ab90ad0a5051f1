#pragma once

/// @file
/// What the benchmarks of one sprintrt-bench run share: its settings (the
/// sprint-sim executable, the Python and its scripts, quick mode), one
/// sprint_runtime, the pipe echo children, a worker driven without a pool,
/// and rigs (pools, their batches and corpora) that several benchmarks and
/// every repetition reuse, so that a child starts once per run, not once
/// per repetition. main creates it before registering the benchmarks and
/// destroys it after they ran: every child is stopped and reaped, every
/// temporary file removed.

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

/// The run's settings, from sprintrt-bench's own flags.
struct bench_settings {
  /// Smaller shapes and counts (the smoke test); the names say which.
  bool quick = false;
  /// The sprint-sim executable.
  std::string sprint_sim;
  /// The Python with NumPy (and PyTorch) for the comparison scripts.
  std::string python = "/usr/bin/python3";
  /// The directory of returnn_parent.py, torch_ctc.py and python_module.py.
  std::string scripts;
  /// The directory holding the Python package `sprintrt`.
  std::string python_module;
  /// This program, for the helpers it runs in fresh processes.
  std::string self;
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

  /// Returns a sprint worker for `opts` spawned without a pool, on an io
  /// thread of its own (started on first use; `opts` of later calls are
  /// ignored).
  const sprint_worker_actor& direct_worker(const sprint_options& opts);

  /// Returns the rig kept under `key`, made by `make()` (returning a
  /// `std::unique_ptr<T>`) on first use. Rigs are destroyed in reverse order
  /// of creation, before the runtime stops.
  template <class T, class Make>
  T& rig(const std::string& key, Make&& make) {
    auto& slot = rigs_[key];
    if (!slot) {
      slot = std::shared_ptr<T>{make()};
      order_.push_back(key);
    }
    return *static_cast<T*>(slot.get());
  }

  /// Destroys every rig, stops the direct worker and the runtime (each child
  /// stopped and reaped), then the echoes. Idempotent.
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

/// Returns the run's world (main's); only valid while main runs the
/// benchmarks.
bench_world& world();

/// Makes `w` the run's world (nullptr: none).
void set_world(bench_world* w);

} // namespace sprintrt::bench
