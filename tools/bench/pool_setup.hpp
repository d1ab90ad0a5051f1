#pragma once

/// @file
/// What `sprintrt-bench pool` sets up around its measurements: a temporary
/// corpus, the sprint-sim executable and options running it, random
/// log-posteriors, and a runtime (plus a worker of its own on a second io
/// thread) that stops every child it started.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/io_thread.hpp"
#include "runtime/temp_directory.hpp"
#include "sim/corpus.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::bench {

/// A corpus file in a directory of its own, removed with it.
struct bench_corpus {
  runtime::temp_directory dir;
  /// `dir/corpus.txt`.
  std::string path;
};

/// Writes `segments` as a fresh directory's `corpus.txt` in sprint-sim's
/// format. Throws `std::runtime_error` if it cannot.
bench_corpus write_corpus(const std::vector<sim::corpus_entry>& segments);

/// Returns `given` if not empty, else sprint-sim next to this program's build
/// tree: `<dir of /proc/self/exe, or of argv0>/../sprint-sim/sprint-sim`.
/// Throws `std::runtime_error` naming the path (and --sprint-sim) if it is
/// not an executable file.
std::string find_sprint_sim(const std::string& given, const std::string& argv0);

/// Options that run `sprint_sim` (CTC, blank 0, length-prefixed framing) on
/// `corpus` with up to `instances` children, with the sprint-sim parameters
/// `extra` appended (e.g. "--*.criterion=zero").
sprint_options sim_options(const std::string& sprint_sim, const std::string& corpus,
                           size_t instances, const std::vector<std::string>& extra = {});

/// sprint-sim's parameter that makes it reply loss 0 and a zero error signal
/// of full size (the request still decoded): transport-only figures.
inline const std::string zero_criterion = "--*.criterion=zero";

/// The Sprint config words of `opts` as its children get them (after the
/// pipe and PythonControl arguments), for another parent (a comparison
/// script) to start the same child.
std::vector<std::string> config_words(const sprint_options& opts);

/// Fills `rows` rows of `dim` float32 values at `data` with log_softmax of
/// N(0, 2) logits (valid log-posteriors), deterministically from `seed`.
void fill_log_posteriors(float* data, size_t rows, size_t dim, uint64_t seed);

/// A sprint_runtime for the pool measurements and, on an io thread of its
/// own, one worker spawned directly (to measure the worker actor without the
/// pool). Stopping (or destroying) it stops the worker, shuts the runtime
/// down and stops the io thread: every child is stopped and reaped.
class bench_runtime {
public:
  /// Starts the runtime (2 scheduler threads) and the extra io thread.
  bench_runtime();

  /// Stops (see `stop`).
  ~bench_runtime();

  bench_runtime(const bench_runtime&) = delete;
  bench_runtime& operator=(const bench_runtime&) = delete;

  /// Returns the runtime.
  sprint_runtime& runtime() noexcept { return runtime_; }

  /// Spawns the directly driven worker for `opts` (once).
  const sprint_worker_actor& spawn_worker(const sprint_options& opts);

  /// Stops the worker, shuts the runtime down, stops the io thread.
  /// Idempotent.
  void stop();

private:
  // Declared first: destroyed last, after the runtime has awaited the worker.
  runtime::io_thread io_;
  sprint_runtime runtime_;
  sprint_worker_actor worker_;
  bool stopped_ = false;
};

} // namespace sprintrt::bench
