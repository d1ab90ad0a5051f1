// `_sprintrt.fsa_loss_cpu`: a batch FSA split into one `sim::fsa` per
// sequence (its states renumbered from 0 at start_end_states[0, b], its final
// state start_end_states[1, b], which must be its highest), each run through a
// `sim::full_sum_engine` on that sequence's first seq_lens[b] frames, read in
// place from the caller's array. Threads take the sequences from a shared
// counter, longest first; each has its own engine, and the engines (with
// their warmed-up workspaces) are kept for the next call.
//
// The engine computes the plain full sum for any finite (or -inf) scores,
// normalized or not: its scaled pass shifts each frame by its maximum score
// and adds the shifts back to log Z, and its log-space pass is exact in
// double; the occupancies it returns are normalized by that Z. It rejects
// NaN and +inf, whose full sum is not defined.

#include "fsa_loss_binding.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/fsa.hpp"
#include "sim/full_sum.hpp"
#include "sim/matrix_views.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

using int64_array = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using float_array = py::array_t<float, py::array::c_style | py::array::forcecast>;

/// The batch of one call, as the threads read it (without the GIL).
struct batch_inputs {
  /// log_probs [T, B, D]: element (t, b, k) at t * frame_stride +
  /// b * sequence_stride + k.
  const float* log_probs = nullptr;
  int64_t frames = 0;
  int64_t batch = 0;
  int64_t classes = 0;
  int64_t frame_stride = 0;
  int64_t sequence_stride = 0;
  /// seq_lens [B].
  const int64_t* lengths = nullptr;
  /// edges [4, E] row-major: from, to, emission, sequence.
  const int64_t* edges = nullptr;
  int64_t num_edges = 0;
  /// weights [E].
  const float* weights = nullptr;
  /// start_end_states [2, B] row-major.
  const int64_t* start_end = nullptr;
  /// Sequence b's edges are order[offsets[b]] .. order[offsets[b + 1] - 1].
  std::vector<int64_t> offsets;
  std::vector<int64_t> order;
};

/// Where the threads write: loss [B] and occupancy [T, B, D], C-contiguous.
struct batch_outputs {
  double* loss = nullptr;
  float* occupancy = nullptr;
};

/// One thread's workspace.
struct worker {
  worker() { engine.set_warn_on_skip(false); } // fsa_loss warns once per call
  sim::full_sum_engine engine;
  std::vector<sim::fsa_edge> edges;
  sim::row_matrix_d gamma;
};

/// Workers of earlier calls, taken and given back with the GIL held (which
/// guards the list). Never destroyed: nothing needs to run at exit.
std::vector<std::unique_ptr<worker>>& idle_workers() {
  static auto* workers = new std::vector<std::unique_ptr<worker>>;
  return *workers;
}

std::string text(int64_t value) {
  return std::to_string(value);
}

/// Checks one edge's ranges and returns its sequence; throws `ValueError`.
int64_t check_edge(const batch_inputs& in, int64_t e) {
  const int64_t* edges = in.edges;
  const int64_t e_count = in.num_edges;
  const int64_t from = edges[e], to = edges[e_count + e], emission = edges[2 * e_count + e];
  const int64_t sequence = edges[3 * e_count + e];
  const std::string edge = "fsa.edges: edge " + text(e);
  if (sequence < 0 || sequence >= in.batch)
    throw py::value_error(edge + " belongs to sequence " + text(sequence) + ", but the batch has " +
                          text(in.batch) + " sequences");
  const int64_t start = in.start_end[sequence], end = in.start_end[in.batch + sequence];
  for (const int64_t state : {from, to})
    if (state < start || state > end)
      throw py::value_error(edge + " of sequence " + text(sequence) + " touches state " +
                            text(state) + ", outside the sequence's states [" + text(start) + ", " +
                            text(end) + "] (fsa.start_end_states)");
  if (emission < 0 || emission >= in.classes)
    throw py::value_error(edge + " emits " + text(emission) + ", but log_probs has " +
                          text(in.classes) + " classes (D)");
  return sequence;
}

/// Checks the lengths and the FSA against the batch (the checks of
/// fsa_loss.py's `_check_lengths` and `_check_fsa_values`, with their
/// messages) and groups the FSA's edges by sequence.
void group_edges(batch_inputs& in, int64_t num_states) {
  for (int64_t b = 0; b < in.batch; ++b) {
    const int64_t start = in.start_end[b], end = in.start_end[in.batch + b];
    if (start < 0 || end < start || end >= num_states)
      throw py::value_error("fsa.start_end_states: sequence " + text(b) + " has start state " +
                            text(start) + " and end state " + text(end) +
                            " (need 0 <= start <= end < num_states = " + text(num_states) + ")");
    if (end - start >= std::numeric_limits<uint32_t>::max())
      throw py::value_error("fsa.start_end_states: sequence " + text(b) +
                            " has more than 2^32-1 states");
    if (in.lengths[b] < 0 || in.lengths[b] > in.frames)
      throw py::value_error("seq_lens[" + text(b) + "] is " + text(in.lengths[b]) +
                            ", not in [0, " + text(in.frames) + "] (log_probs' frames)");
  }
  std::vector<int64_t> by_start(in.batch);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](int64_t x, int64_t y) { return in.start_end[x] < in.start_end[y]; });
  for (int64_t i = 0; i + 1 < in.batch; ++i)
    if (in.start_end[in.batch + by_start[i]] >= in.start_end[by_start[i + 1]])
      throw py::value_error("fsa.start_end_states: the states of sequences " + text(by_start[i]) +
                            " and " + text(by_start[i + 1]) + " overlap");
  for (int64_t e = 0; e < in.num_edges; ++e)
    if (std::isnan(in.weights[e]) || in.weights[e] == -std::numeric_limits<float>::infinity())
      throw py::value_error("fsa.weights[" + text(e) + "] is " +
                            (std::isnan(in.weights[e]) ? "nan" : "-inf") +
                            " (a cost: finite or +inf)");
  in.offsets.assign(in.batch + 1, 0);
  std::vector<int64_t> sequences(in.num_edges);
  for (int64_t e = 0; e < in.num_edges; ++e) {
    sequences[e] = check_edge(in, e);
    ++in.offsets[sequences[e] + 1];
  }
  std::partial_sum(in.offsets.begin(), in.offsets.end(), in.offsets.begin());
  in.order.resize(in.num_edges);
  std::vector<int64_t> next(in.offsets.begin(), in.offsets.end() - 1);
  for (int64_t e = 0; e < in.num_edges; ++e)
    in.order[next[sequences[e]]++] = e;
}

/// Computes sequence b; returns an error message, empty on success.
std::string run_sequence(worker& w, const batch_inputs& in, int64_t b, const batch_outputs& out) {
  const int64_t length = in.lengths[b];
  const int64_t start = in.start_end[b], end = in.start_end[in.batch + b];
  const auto classes = static_cast<size_t>(in.classes);
  for (int64_t t = length; t < in.frames; ++t)
    std::memset(out.occupancy + (t * in.batch + b) * in.classes, 0, classes * sizeof(float));
  if (length == 0) {
    // The only path of no edges stays in the start state.
    out.loss[b] = start == end ? 0.0 : std::numeric_limits<double>::infinity();
    return {};
  }
  const int64_t e_count = in.num_edges;
  w.edges.clear();
  for (int64_t i = in.offsets[b]; i < in.offsets[b + 1]; ++i) {
    const int64_t e = in.order[i];
    w.edges.push_back(sim::fsa_edge{static_cast<uint32_t>(in.edges[e] - start),
                                    static_cast<uint32_t>(in.edges[e_count + e] - start),
                                    static_cast<uint32_t>(in.edges[2 * e_count + e]),
                                    in.weights[e]});
  }
  const std::string name = "sequence " + text(b) + " of log_probs";
  auto automaton = sim::fsa::make(static_cast<uint32_t>(end - start + 1), w.edges);
  if (!automaton)
    return "fsa, sequence " + text(b) + ": " + error_message(automaton.error());
  const Eigen::Map<const sim::row_matrix_f, 0, Eigen::OuterStride<>> log_probs{
      in.log_probs + b * in.sequence_stride, length, in.classes,
      Eigen::OuterStride<>{in.frame_stride}};
  w.gamma.resize(length, in.classes);
  auto result = w.engine.loss_and_occupancy(name, *automaton, log_probs, w.gamma);
  if (!result)
    return error_message(result.error());
  out.loss[b] = result->loss;
  for (int64_t t = 0; t < length; ++t) {
    const double* gamma = w.gamma.row(t).data();
    float* row = out.occupancy + (t * in.batch + b) * in.classes;
    for (size_t k = 0; k < classes; ++k)
      row[k] = static_cast<float>(gamma[k]);
  }
  return {};
}

/// Runs every sequence on `workers.size()` threads (the calling one among
/// them); returns the first sequence's error, empty if none.
std::string run_batch(std::vector<std::unique_ptr<worker>>& workers, const batch_inputs& in,
                      const batch_outputs& out) {
  // Longest first, so that no thread starts a long sequence last.
  std::vector<int64_t> schedule(in.batch);
  std::iota(schedule.begin(), schedule.end(), 0);
  const auto work = [&](int64_t b) {
    return in.lengths[b] * (in.offsets[b + 1] - in.offsets[b] + 1);
  };
  std::stable_sort(schedule.begin(), schedule.end(),
                   [&](int64_t x, int64_t y) { return work(x) > work(y); });
  std::vector<std::string> errors(in.batch);
  std::atomic<size_t> next{0};
  const auto drain = [&](worker& w) {
    for (size_t i = next++; i < schedule.size(); i = next++) {
      const int64_t b = schedule[i];
      try {
        errors[b] = run_sequence(w, in, b, out);
      } catch (const std::exception& e) {
        errors[b] = "sequence " + text(b) + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers.size(); ++i) {
    try {
      threads.emplace_back(drain, std::ref(*workers[i]));
    } catch (const std::system_error&) {
      break; // No more threads to be had: the ones running take the rest.
    }
  }
  drain(*workers[0]);
  for (auto& thread : threads)
    thread.join();
  for (const auto& error : errors)
    if (!error.empty())
      return error;
  return {};
}

/// Throws `ValueError` unless `array` has `shape` (-1: any extent).
void require_shape(const py::array& array, std::initializer_list<int64_t> shape, const char* name,
                   const char* axes) {
  bool ok = array.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = shape.begin()[i] < 0 || array.shape(i) == shape.begin()[i];
  if (ok)
    return;
  std::string got;
  for (py::ssize_t i = 0; i < array.ndim(); ++i)
    got += (i == 0 ? "" : ", ") + text(array.shape(i));
  throw py::value_error(std::string{name} + " must have shape [" + axes + "], got [" + got + "]");
}

py::tuple fsa_loss_cpu(const py::array& log_probs, const int64_array& seq_lens,
                       const int64_array& edges, const float_array& weights,
                       const int64_array& start_end_states, int64_t num_states,
                       int64_t num_threads) {
  if (!log_probs.dtype().is(py::dtype::of<float>()))
    throw py::type_error("log_probs must be float32, got " +
                         py::str(log_probs.dtype()).cast<std::string>());
  require_shape(log_probs, {-1, -1, -1}, "log_probs", "T, B, D");
  constexpr auto item = static_cast<py::ssize_t>(sizeof(float));
  // A class axis of extent 1 may have any stride (torch gives it one).
  const bool unit_stride = log_probs.shape(2) == 1 || log_probs.strides(2) == item;
  if (!unit_stride || log_probs.strides(0) < 0 || log_probs.strides(1) < 0 ||
      log_probs.strides(0) % item != 0 || log_probs.strides(1) % item != 0 ||
      reinterpret_cast<uintptr_t>(log_probs.data()) % alignof(float) != 0)
    throw py::value_error("log_probs must be aligned, with non-negative strides, contiguous "
                          "along D");
  batch_inputs in;
  in.log_probs = static_cast<const float*>(log_probs.data());
  in.frames = log_probs.shape(0);
  in.batch = log_probs.shape(1);
  in.classes = log_probs.shape(2);
  in.frame_stride = log_probs.strides(0) / item;
  in.sequence_stride = log_probs.strides(1) / item;
  require_shape(seq_lens, {in.batch}, "seq_lens", "B");
  require_shape(edges, {4, -1}, "fsa.edges", "4, E");
  in.num_edges = edges.shape(1);
  require_shape(weights, {in.num_edges}, "fsa.weights", "E");
  require_shape(start_end_states, {2, in.batch}, "fsa.start_end_states", "2, B");
  if (num_threads < 1)
    throw py::value_error("num_threads must be at least 1, got " + text(num_threads));
  in.lengths = seq_lens.data();
  in.edges = edges.data();
  in.weights = weights.data();
  in.start_end = start_end_states.data();
  group_edges(in, num_states);

  py::array_t<double> loss(in.batch);
  py::array_t<float> occupancy({in.frames, in.batch, in.classes});
  const batch_outputs out{loss.mutable_data(), occupancy.mutable_data()};
  auto& idle = idle_workers();
  const auto count = static_cast<size_t>(std::max<int64_t>(1, std::min(num_threads, in.batch)));
  std::vector<std::unique_ptr<worker>> workers;
  while (workers.size() < count) {
    if (idle.empty()) {
      workers.push_back(std::make_unique<worker>());
    } else {
      workers.push_back(std::move(idle.back()));
      idle.pop_back();
    }
  }
  std::string error;
  {
    py::gil_scoped_release no_gil;
    error = run_batch(workers, in, out);
  }
  for (auto& w : workers)
    idle.push_back(std::move(w));
  if (!error.empty())
    throw py::value_error(error);
  return py::make_tuple(loss, occupancy);
}

} // namespace

void bind_fsa_loss(py::module_& m) {
  m.def("fsa_loss_cpu", &fsa_loss_cpu, py::arg("log_probs"), py::arg("seq_lens"), py::arg("edges"),
        py::arg("weights"), py::arg("start_end_states"), py::arg("num_states"),
        py::arg("num_threads") = 1,
        "Full-sum loss float64 [B] and occupancies float32 [T, B, D] (zero in the padding "
        "frames and for sequences without a path, whose loss is inf) of float32 log_probs "
        "[T, B, D] (any strides, contiguous along D) over a batch FSA: edges int [4, E] "
        "(from, to, emission, sequence), weights float [E] (costs, -log), start_end_states "
        "int [2, B] (each sequence's states are start..end, end its final state, the "
        "ranges disjoint and below num_states). Runs "
        "sprintrt's full-sum kernel on num_threads threads with the GIL released; raises "
        "ValueError naming a malformed argument.");
}

} // namespace sprintrt::python
