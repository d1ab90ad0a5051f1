// `_sprintrt.fsa_loss_cpu`: a batch FSA split into one `criterion::fsa` per
// sequence (its states renumbered from 0 at start_end_states[0, b], its final
// state start_end_states[1, b], which must be its highest), each run through a
// `criterion::full_sum_engine` on that sequence's first seq_lens[b] frames, read in
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
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "batch_fsa.hpp"
#include "criterion/fsa.hpp"
#include "criterion/full_sum.hpp"
#include "criterion/matrix_views.hpp"
#include "kernel_threads.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

/// One thread's workspace.
struct worker {
  worker() { engine.set_warn_on_skip(false); } // fsa_loss warns once per call
  criterion::full_sum_engine engine;
  std::vector<criterion::fsa_edge> edges;
  criterion::row_matrix_d gamma;
};

std::string text(int64_t value) {
  return std::to_string(value);
}

/// Computes sequence b into loss[b] and occupancy [T, B, D]; returns an
/// error message, empty on success.
std::string run_sequence(worker& w, const frames_view& in, const int64_t* lengths,
                         const batch_fsa& fsa, int64_t b, double* loss, float* occupancy) {
  const int64_t length = lengths[b];
  const auto classes = static_cast<size_t>(in.classes);
  for (int64_t t = length; t < in.frames; ++t)
    std::memset(occupancy + (t * in.batch + b) * in.classes, 0, classes * sizeof(float));
  if (length == 0) {
    // The only path of no edges stays in the start state.
    loss[b] = fsa.start(b) == fsa.end(b) ? 0.0 : std::numeric_limits<double>::infinity();
    return {};
  }
  auto automaton = sequence_fsa(fsa, b, w.edges);
  if (!automaton)
    return "fsa, sequence " + text(b) + ": " + error_message(automaton.error());
  const std::string name = "sequence " + text(b) + " of log_probs";
  w.gamma.resize(length, in.classes);
  auto result = w.engine.loss_and_occupancy(name, *automaton, in.sequence(b, length), w.gamma);
  if (!result)
    return error_message(result.error());
  loss[b] = result->loss;
  for (int64_t t = 0; t < length; ++t) {
    const double* gamma = w.gamma.row(t).data();
    float* row = occupancy + (t * in.batch + b) * in.classes;
    for (size_t k = 0; k < classes; ++k)
      row[k] = static_cast<float>(gamma[k]);
  }
  return {};
}

py::tuple fsa_loss_cpu(const py::array& log_probs, const int64_array& seq_lens,
                       const int64_array& edges, const double_array& weights,
                       const int64_array& start_end_states, int64_t num_states,
                       int64_t num_threads) {
  const frames_view in = read_log_probs(log_probs);
  require_shape(seq_lens, {in.batch}, "seq_lens", "B");
  require_shape(edges, {4, -1}, "fsa.edges", "4, E");
  require_shape(weights, {edges.shape(1)}, "fsa.weights", "E");
  require_shape(start_end_states, {2, in.batch}, "fsa.start_end_states", "2, B");
  if (num_threads < 1)
    throw py::value_error("num_threads must be at least 1, got " + text(num_threads));
  const int64_t* lengths = seq_lens.data();
  check_lengths(lengths, in.batch, in.frames);
  batch_fsa fsa{"fsa",
                edges.data(),
                edges.shape(1),
                weights.data(),
                start_end_states.data(),
                in.batch,
                num_states,
                {},
                {}};
  check_and_group(fsa, in.classes);

  py::array_t<double> loss(in.batch);
  py::array_t<float> occupancy({in.frames, in.batch, in.classes});
  double* loss_out = loss.mutable_data();
  float* occupancy_out = occupancy.mutable_data();
  const auto count = static_cast<size_t>(std::max<int64_t>(1, std::min(num_threads, in.batch)));
  auto workers = worker_cache<worker>::take(count);
  std::string error;
  {
    py::gil_scoped_release no_gil;
    error = run_sequences(
        count, in.batch, [&](int64_t b) { return lengths[b] * (fsa.edge_count(b) + 1); },
        [&](size_t w, int64_t b) {
          return run_sequence(*workers[w], in, lengths, fsa, b, loss_out, occupancy_out);
        });
  }
  worker_cache<worker>::give_back(workers);
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
