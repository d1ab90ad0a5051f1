#pragma once

/// @file
/// What the benchmark families of sprintrt-bench share: the run's state (its
/// settings, one sprint_runtime, rigs reused by every repetition), errors as
/// exceptions, registration and timing, the figures, corpora and sprint-sim
/// options, random batches, and the other programs a benchmark runs.
/// BENCHMARKS.md says what each benchmark measures; quick mode shrinks shapes
/// and counts.

#include <benchmark/benchmark.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <nlohmann/json.hpp>

#include "criterion/corpus.hpp"
#include "process/io_thread.hpp"
#include "process/temp_directory.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/batch.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/worker_interface.hpp"

namespace sprintrt::bench {

using bench_state = benchmark::State;

// --- Families, one registration function per *_benchmarks.cpp, in main's order.

void register_codec_benchmarks();         ///< request encode, reply decode
void register_criterion_benchmarks();     ///< sprint-sim's criterion, full sum, MMI, sMBR
void register_engine_benchmarks();        ///< the scaled forward-backward against its GEMMs
void register_transport_benchmarks();     ///< small and tiny segments through one child
void register_large_segment_benchmarks(); ///< 48 MB segments, pipes and shared memory
void register_batch_benchmarks();         ///< CTC batches over 1, 2 (4) workers
void register_seqtrain_benchmarks();      ///< the sequence-training scheduler
void register_cancel_benchmarks();        ///< a cancelled batch: children kept or killed
void register_remote_benchmarks();        ///< a large segment to a remote pool
void register_python_benchmarks();        ///< the Python module against C++ (batch_benchmarks.cpp)

/// `--helper=large-rss FRAMES DIM BATCH`: one large batch in this process;
/// prints its peak RSS increase as JSON. Returns the exit status.
int run_large_rss_helper(const std::vector<std::string>& args);

/// `--helper=remote-echo`: a TCP echo and an echo pool; prints their ports,
/// serves until killed. Returns the exit status.
int run_remote_echo_helper();

/// `--helper=pipe-echo`: the store-and-forward echo's loop on fds 0 and 1
/// until EOF. Returns the exit status.
int serve_pipe_echo();

// --- Other programs: echo children, the Python scripts, this program's helpers.

/// A started program and our ends of its pipes.
struct child_program {
  pid_t pid = -1;
  int to_child = -1;   ///< its stdin (-1 when that is /dev/null)
  int from_child = -1; ///< its stdout
};

/// Starts `argv` (no shell) with its stdout on a pipe and its stdin on
/// another if `piped_stdin`, else on /dev/null; both pipes at `pipe_size`
/// bytes if not 0 (best effort). Throws `std::runtime_error` on failure.
child_program spawn_program(const std::vector<std::string>& argv, bool piped_stdin = false,
                            int pipe_size = 0);

/// Waits for `pid`; returns its exit status, -1 if it did not exit normally.
int reap(pid_t pid);

/// Runs `argv` to its end; returns its last non-empty line parsed as a JSON
/// object. Throws `std::runtime_error` naming `what` if it failed or printed
/// none there.
nlohmann::json run_json(const std::vector<std::string>& argv, const std::string& what);

/// Runs `script` of the run's scripts directory with `args` and the run's
/// Python; returns its JSON document. Marks `state` skipped ("skipped: ...",
/// which figures.py and the smoke test accept for Python figures) and returns
/// nothing without that Python (`needs` names the package the script
/// imports) or when the script prints {"skipped": reason}.
std::optional<nlohmann::json> run_script(bench_state& state, const std::string& needs,
                                         const std::string& script,
                                         const std::vector<std::string>& args);

/// Reports `samples` (a script's timings, `unit` seconds each) as the
/// manual times of `state`'s iterations, one sample each.
void replay_samples(bench_state& state, const nlohmann::json& samples, double unit);

/// Writes all `n` bytes to `fd`; throws naming `what` on errors.
void write_fully(int fd, const char* data, size_t n, const std::string& what);

/// Reads exactly `n` bytes from `fd`; returns false if the stream ended
/// first; throws naming `what` on errors.
bool read_fully(int fd, char* data, size_t n, const std::string& what);

// --- The run's state.

/// The run's settings, from sprintrt-bench's own flags (main.cpp).
struct bench_settings {
  bool quick = false;                      ///< smaller shapes and counts
  std::string sprint_sim;                  ///< the sprint-sim executable
  std::string python = "/usr/bin/python3"; ///< the comparison scripts' Python
  std::string scripts;                     ///< the comparison scripts' directory
  std::string python_module;               ///< the directory of the package sprintrt
  std::string self;                        ///< this program, for its helpers
};

/// The state one run shares: its settings, one sprint_runtime, a worker
/// without a pool, and rigs (pools, batches, corpora) that
/// every repetition reuses, so that a child starts once per run. Destroyed
/// after the run: every child stopped and reaped, every file removed.
class bench_world {
public:
  /// Keeps `settings` and becomes the run's world (`world()`); starts
  /// nothing yet.
  explicit bench_world(bench_settings settings);

  /// Stops (see `stop`); the run has no world after.
  ~bench_world();
  bench_world(const bench_world&) = delete;
  bench_world& operator=(const bench_world&) = delete;

  const bench_settings& settings() const noexcept { return settings_; }

  /// Returns the runtime, started on first use (2 scheduler threads).
  sprint_runtime& runtime();

  /// Returns a sprint worker for `opts` without a pool, on an io thread of
  /// its own (started on first use; later calls' `opts` are ignored).
  const sprint_worker_actor& direct_worker(const sprint_options& opts);

  /// Returns the rig under `key`, made by `make()` (a `std::unique_ptr<T>`)
  /// on first use; rigs die in reverse order, before the runtime stops.
  template <class T, class Make>
  T& rig(const std::string& key, Make&& make) {
    for (const auto& [name, made] : rigs_)
      if (name == key)
        return *static_cast<T*>(made.get());
    rigs_.emplace_back(key, std::shared_ptr<T>{make()}); // after the rigs `make` made
    return *static_cast<T*>(rigs_.back().second.get());
  }

  /// Destroys the rigs, stops the worker and the runtime (every child
  /// reaped). Idempotent.
  void stop();

private:
  bench_settings settings_;
  // Declared before the runtime: destroyed after it has awaited the worker.
  std::unique_ptr<process::io_thread> worker_io_;
  std::unique_ptr<sprint_runtime> runtime_;
  sprint_worker_actor worker_;
  std::vector<std::pair<std::string, std::shared_ptr<void>>> rigs_; ///< in creation order
};

/// Returns the run's world (main's, while it runs the benchmarks).
bench_world& world();

// --- Errors, registration, timing, figures.

/// Throws `std::runtime_error` with `what` and the rendered `err`.
[[noreturn]] void throw_error(const std::string& what, const caf::error& err);

/// Throws (see `throw_error`) if `err` is set.
inline void check(const caf::error& err, const std::string& what) {
  if (err)
    throw_error(what, err);
}

/// Returns the value of `x` or throws its error (see `throw_error`).
template <class T>
T unwrap(caf::expected<T> x, const std::string& what) {
  if (!x)
    throw_error(what, x.error());
  return std::move(*x);
}

/// Which time Google Benchmark reports for a benchmark.
enum class timing { cpu, real, manual };

/// Registers `body` as benchmark `name` in `unit` and `clock`, with "min"
/// and "max" statistics. An exception from `body` fails only this benchmark
/// (`SkipWithError`) and counts in `benchmark_failures`.
benchmark::internal::Benchmark* add_benchmark(const std::string& name, benchmark::TimeUnit unit,
                                              timing clock, std::function<void(bench_state&)> body);

/// The benchmarks that failed so far (not the skipped ones).
int benchmark_failures();

/// Adds a figure: a benchmark's result next to its baseline's, their ratio
/// and its target, carried in the output's context (JSON array "figures"),
/// from which scripts/bench/figures.py makes BENCHMARKS.md's tables. `title`
/// says what is measured; `unit` is a time unit (ns, us, ms, s) and what it
/// is per ("us/segment"), or a counter's unit; `value` and `baseline` are a
/// benchmark's name (its real time) or "name@counter"; `ratio` is
/// "value/baseline" (a slowdown) or "baseline/value" (a speedup, a fraction
/// of a limit); `target` e.g. "<= 1.5" or "" for none, held to `on`
/// ("ratio" or "value"); `python`: skipped, not failed, without Python.
void declare_figure(std::string title, std::string unit, std::string value, std::string baseline,
                    std::string ratio = "value/baseline", std::string target = "",
                    std::string on = "ratio", bool python = false);

/// Writes the figures into the benchmark context (key "figures"); call once
/// after registering every benchmark.
void publish_figures();

/// The steady clock of every manual timing.
using bench_clock = std::chrono::steady_clock;

/// Returns the seconds since `start`.
inline double seconds_since(bench_clock::time_point start) {
  return std::chrono::duration<double>(bench_clock::now() - start).count();
}

/// Runs `body` once untimed (buffers grow once, as a worker's do), then once
/// per iteration.
template <class Body>
void run_warm(bench_state& state, Body&& body) {
  body();
  for (auto _ : state)
    body();
}

/// Runs `body` once per iteration, its wall time the manual time; returns
/// their sum in seconds.
template <class Body>
double time_manually(bench_state& state, Body&& body) {
  double total = 0;
  for (auto _ : state) {
    const auto start = bench_clock::now();
    body();
    const double seconds = seconds_since(start);
    state.SetIterationTime(seconds);
    total += seconds;
  }
  return total;
}

/// `time_manually` for a body handling `items` things, adding `counter`:
/// the mean time per item in us, or in ms if `counter` starts with "ms". (A
/// manual time per item would make Google Benchmark run `items` times longer.)
template <class Body>
void time_per_item(bench_state& state, double items, const std::string& counter, Body&& body) {
  const double unit = counter.compare(0, 2, "ms") == 0 ? 1e3 : 1e6;
  state.counters[counter] = benchmark::Counter(time_manually(state, body) * unit / items,
                                               benchmark::Counter::kAvgIterations);
}

// --- Shapes, corpora, sprint-sim, random data.

/// Sizes by letter in order, e.g. {{"T", 150}, {"D", 28}}.
using size_list = std::vector<std::pair<std::string, size_t>>;

/// "T:150/D:28": the sizes as a benchmark's name shows them.
std::string shape_name(const size_list& sizes);

/// "T=150, D=28": the sizes as a figure's title shows them.
std::string shape_text(const size_list& sizes);

/// `prefix` followed by 0, 1, ..., `count` - 1.
std::vector<std::string> numbered(const std::string& prefix, size_t count);

/// A corpus file (`path`) in a directory of its own, removed with it.
struct bench_corpus {
  process::temp_directory dir;
  std::string path;
};

/// Writes `segments` as a fresh directory's corpus.txt (sprint-sim's format).
bench_corpus write_corpus(const std::vector<criterion::corpus_entry>& segments);

/// sprint-sim's parameter for loss 0 and a zero error signal of full size
/// (the request still decoded and checked).
inline const std::string zero_criterion = "--*.criterion=zero";

/// Options running the run's sprint-sim (CTC, blank 0, length-prefixed) on
/// `corpus` with `instances` children and the parameters `extra`.
sprint_options sim_options(const std::string& corpus, size_t instances,
                           const std::vector<std::string>& extra = {});

/// The criterion sprint-sim runs with these options over `corpus`.
sim::corpus_criterion load_criterion(const std::string& corpus,
                                     sim::criterion_kind kind = sim::criterion_kind::full_sum);

/// `count` labels in 1..dim-1 that CTC can align in `frames` frames.
std::vector<uint32_t> alignable_labels(size_t count, size_t dim, size_t frames, std::mt19937& rng);

/// A batch of segments `tags` of `lengths` frames over random [T, B, D]
/// log-posteriors from `seed`.
batch random_batch(const std::vector<int64_t>& lengths, const std::vector<std::string>& tags,
                   size_t dim, uint64_t seed);

/// Computes `data` through `client`, passing the previous error signal
/// `reuse` back (so that the batch allocates nothing) and keeping the new one
/// there; returns the losses.
std::vector<float> compute_reusing(const pool_client& client, const batch& data, tensor& reuse);

} // namespace sprintrt::bench
