// Each thread cuts its sequence's numerator out of the batch FSA and runs
// `criterion::sequence_loss` over it and the denominator: the shared denominator is
// converted once, before the threads start, and only read by them (each
// engine keeps its own forward and backward scores, O(states x T) per
// thread); per-sequence denominators are cut out like the numerators.

#include "sequence_loss_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "batch_fsa.hpp"
#include "criterion/sequence_criterion.hpp"
#include "criterion/sequence_engine.hpp"
#include "criterion/wfsa.hpp"
#include "kernel_threads.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

/// One thread's workspace.
struct worker {
  worker() { engine.set_warn_on_skip(false); } // fsa_loss warns once per call
  criterion::sequence_engine engine;
  std::vector<criterion::fsa_edge> edges;
  criterion::wfsa denominator;
};

/// What every sequence of one call shares, read by the threads.
struct criterion_inputs {
  frames_view log_probs;
  const int64_t* lengths = nullptr;
  const double* numerator_cost = nullptr;
  batch_fsa numerator;
  batch_fsa denominator;
  /// The denominator of every sequence when `denominator` has one sequence,
  /// and its highest emission.
  const criterion::wfsa* shared = nullptr;
  uint32_t shared_max_emission = 0;
  criterion::sequence_kind kind = criterion::sequence_kind::mmi;
  criterion::sequence_scales scales;
};

std::string text(int64_t value) {
  return std::to_string(value);
}

criterion::sequence_kind parse_kind(const std::string& criterion) {
  if (criterion == "mmi")
    return criterion::sequence_kind::mmi;
  if (criterion == "bmmi")
    return criterion::sequence_kind::bmmi;
  if (criterion == "smbr")
    return criterion::sequence_kind::smbr;
  throw py::value_error("criterion must be mmi, bmmi or smbr, got '" + criterion + "'");
}

/// The highest emission of `graph`'s edges (0 for none).
uint32_t max_emission(const criterion::wfsa& graph) {
  uint32_t top = 0;
  for (const auto& edge : graph.edges)
    top = std::max(top, edge.emission);
  return top;
}

/// Computes sequence b into loss[b] and gradient [T, B, D]; returns an error
/// message, empty on success.
std::string run_sequence(worker& w, const criterion_inputs& in, int64_t b, double* loss,
                         float* gradient) {
  const frames_view& x = in.log_probs;
  const int64_t length = in.lengths[b];
  for (int64_t t = length; t < x.frames; ++t)
    std::memset(gradient + (t * x.batch + b) * x.classes, 0,
                static_cast<size_t>(x.classes) * sizeof(float));
  if (length == 0) {
    // Nothing to tell apart: 0 when the numerator has the empty path.
    loss[b] = in.numerator.start(b) == in.numerator.end(b)
                  ? 0.0
                  : std::numeric_limits<double>::infinity();
    return {};
  }
  auto numerator = sequence_fsa(in.numerator, b, w.edges);
  if (!numerator)
    return "fsa, sequence " + text(b) + ": " + error_message(numerator.error());
  const criterion::wfsa* denominator = in.shared;
  uint32_t den_max_emission = in.shared_max_emission;
  if (denominator == nullptr) {
    sequence_wfsa(in.denominator, b, w.denominator);
    denominator = &w.denominator;
    den_max_emission = max_emission(w.denominator);
  }
  const std::string name = "sequence " + text(b) + " of log_probs";
  const criterion::sequence_segment segment{name, &*numerator, denominator, den_max_emission,
                                            in.numerator_cost[b]};
  const Eigen::Map<criterion::row_matrix_f, 0, Eigen::OuterStride<>> out{
      gradient + b * x.classes, length, x.classes, Eigen::OuterStride<>{x.batch * x.classes}};
  auto result =
      criterion::sequence_loss(in.kind, in.scales, segment, x.sequence(b, length), out, w.engine);
  if (!result)
    return error_message(result.error());
  loss[b] = result->loss;
  return {};
}

py::tuple sequence_loss_cpu(const py::array& log_probs, const int64_array& seq_lens,
                            const int64_array& edges, const double_array& weights,
                            const int64_array& start_end_states, int64_t num_states,
                            const int64_array& den_edges, const double_array& den_weights,
                            const int64_array& den_start_end_states, int64_t den_num_states,
                            const double_array& num_cost, const std::string& criterion,
                            double am_scale, double boost, int64_t num_threads) {
  criterion_inputs in;
  in.log_probs = read_log_probs(log_probs);
  const int64_t batch = in.log_probs.batch;
  in.kind = parse_kind(criterion);
  in.scales.am = am_scale;
  in.scales.boost = boost;
  if (auto problem = criterion::check_scales(in.kind, in.scales); !problem.empty())
    throw py::value_error(problem);
  require_shape(seq_lens, {batch}, "seq_lens", "B");
  require_shape(edges, {4, -1}, "fsa.edges", "4, E");
  require_shape(weights, {edges.shape(1)}, "fsa.weights", "E");
  require_shape(start_end_states, {2, batch}, "fsa.start_end_states", "2, B");
  require_shape(den_edges, {4, -1}, "den_fsa.edges", "4, E");
  require_shape(den_weights, {den_edges.shape(1)}, "den_fsa.weights", "E");
  require_shape(den_start_end_states, {2, -1}, "den_fsa.start_end_states", "2, N");
  const int64_t graphs = den_start_end_states.shape(1);
  if (graphs != 1 && graphs != batch)
    throw py::value_error("den_fsa has " + text(graphs) + " sequences for a batch of " +
                          text(batch) + " (one graph for every sequence, or one per sequence)");
  require_shape(num_cost, {batch}, "num_cost", "B");
  if (num_threads < 1)
    throw py::value_error("num_threads must be at least 1, got " + text(num_threads));
  in.lengths = seq_lens.data();
  check_lengths(in.lengths, batch, in.log_probs.frames);
  in.numerator = batch_fsa{"fsa",
                           edges.data(),
                           edges.shape(1),
                           weights.data(),
                           start_end_states.data(),
                           batch,
                           num_states,
                           {},
                           {}};
  check_and_group(in.numerator, in.log_probs.classes);
  in.denominator = batch_fsa{"den_fsa",
                             den_edges.data(),
                             den_edges.shape(1),
                             den_weights.data(),
                             den_start_end_states.data(),
                             graphs,
                             den_num_states,
                             {},
                             {}};
  check_and_group(in.denominator, in.log_probs.classes);
  in.numerator_cost = num_cost.data();
  criterion::wfsa shared;
  if (graphs == 1) {
    sequence_wfsa(in.denominator, 0, shared);
    in.shared = &shared;
    in.shared_max_emission = max_emission(shared);
  }

  py::array_t<double> loss(batch);
  py::array_t<float> gradient({in.log_probs.frames, batch, in.log_probs.classes});
  double* loss_out = loss.mutable_data();
  float* gradient_out = gradient.mutable_data();
  const auto count = static_cast<size_t>(std::max<int64_t>(1, std::min(num_threads, batch)));
  auto workers = worker_cache<worker>::take(count);
  const auto work = [&](int64_t b) {
    const int64_t den_edges = in.shared ? 0 : in.denominator.edge_count(b);
    return in.lengths[b] * (in.numerator.edge_count(b) + den_edges + 1);
  };
  std::string error;
  {
    py::gil_scoped_release no_gil;
    error = run_sequences(count, batch, work, [&](size_t w, int64_t b) {
      return run_sequence(*workers[w], in, b, loss_out, gradient_out);
    });
  }
  worker_cache<worker>::give_back(workers);
  if (!error.empty())
    throw py::value_error(error);
  return py::make_tuple(loss, gradient);
}

} // namespace

void bind_sequence_loss(py::module_& m) {
  m.def("sequence_loss_cpu", &sequence_loss_cpu, py::arg("log_probs"), py::arg("seq_lens"),
        py::arg("edges"), py::arg("weights"), py::arg("start_end_states"), py::arg("num_states"),
        py::arg("den_edges"), py::arg("den_weights"), py::arg("den_start_end_states"),
        py::arg("den_num_states"), py::arg("num_cost"), py::arg("criterion"),
        py::arg("am_scale") = 1.0, py::arg("boost") = 0.0, py::arg("num_threads") = 1,
        "Loss float64 [B] and its gradient float32 [T, B, D] with respect to log_probs (zero in "
        "the padding frames and for skipped sequences, whose loss is inf) of criterion mmi, "
        "bmmi or smbr over float32 log_probs [T, B, D]: numerators in the batch FSA layout "
        "(edges, weights, start_end_states, num_states; each numerator path pays num_cost[b]), "
        "the denominator in the same layout with one sequence (shared by all) or B. Raises "
        "ValueError naming a malformed argument.");
}

} // namespace sprintrt::python
