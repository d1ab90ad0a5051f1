#pragma once

/// @file
/// What the benchmarks share besides the run's state (bench_world.hpp):
/// errors as exceptions, registration and timing, shape names, corpora and
/// sprint-sim options, random jobs and batches, message sizes, fd I/O.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "criterion/corpus.hpp"
#include "runtime/temp_directory.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/batch.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/segment.hpp"

namespace sprintrt::bench {

using bench_state = benchmark::State;

/// Throws `std::runtime_error` with `what` and the rendered `err`.
[[noreturn]] void throw_error(const std::string& what, const caf::error& err);

/// Throws (see `throw_error`) if `err` is set.
void check(const caf::error& err, const std::string& what);

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

/// The steady clock of every manual timing.
using bench_clock = std::chrono::steady_clock;

/// Returns the seconds since `start`.
double seconds_since(bench_clock::time_point start);

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

/// Sizes by letter in order, e.g. {{"T", 150}, {"D", 28}}.
using size_list = std::vector<std::pair<std::string, size_t>>;

/// "T:150/D:28": the sizes as a benchmark's name shows them.
std::string shape_name(const size_list& sizes);

/// "T=150, D=28": the sizes as a figure's title shows them.
std::string shape_text(const size_list& sizes);

/// A corpus file (`path`) in a directory of its own, removed with it.
struct bench_corpus {
  runtime::temp_directory dir;
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

/// A job for `name` over random log-posteriors [frames, dim] from `seed`,
/// with an error-signal slice every request writes into again.
segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed);

/// A batch of segments `tags` of `lengths` frames over random [T, B, D]
/// log-posteriors from `seed`.
batch random_batch(const std::vector<int64_t>& lengths, const std::vector<std::string>& tags,
                   size_t dim, uint64_t seed);

/// Computes `data` through `client`, passing the previous error signal
/// `reuse` back (so that the batch allocates nothing) and keeping the new one
/// there; returns the losses.
std::vector<float> compute_reusing(const pool_client& client, const batch& data, tensor& reuse);

/// The framed size of a loss request for `segment` of [frames, dim].
size_t request_bytes(const std::string& segment, size_t frames, size_t dim);

/// The framed size of its reply.
size_t reply_bytes(size_t frames, size_t dim);

/// Writes all `n` bytes to `fd`; throws naming `what` on errors.
void write_fully(int fd, const char* data, size_t n, const std::string& what);

/// Reads exactly `n` bytes from `fd`; returns false if the stream ended
/// first; throws naming `what` on errors.
bool read_fully(int fd, char* data, size_t n, const std::string& what);

} // namespace sprintrt::bench
