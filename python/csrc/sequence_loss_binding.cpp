// A shared denominator is converted and laid out once, before the threads
// start, and only read by them; each thread takes a block of the batch's
// sequences, cuts their numerators out of the batch FSA and runs
// `criterion::sequence_loss_block` over them: one scaled forward-backward
// of the shared denominator for the whole block (O(T x states x block) per
// thread). Per-sequence denominators are cut out like the numerators, a
// block per sequence.

#include "sequence_loss_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "batch_fsa.hpp"
#include "criterion/frame_graph.hpp"
#include "criterion/sequence_criterion.hpp"
#include "criterion/wfsa.hpp"
#include "kernel_threads.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

/// One thread's workspace.
struct worker {
  worker() { workspace.set_warn_on_skip(false); } // fsa_loss warns once per call
  criterion::sequence_workspace workspace;
  // Per sequence of the block: its numerator's edges and FSA, its
  // denominator (unless shared), and its name.
  std::vector<std::vector<criterion::fsa_edge>> edges;
  std::vector<criterion::fsa> numerators;
  std::vector<criterion::wfsa> denominators;
  std::vector<std::string> names;
  std::vector<criterion::sequence_job> jobs;
  std::vector<criterion::full_sum_result> results;
};

/// What every sequence of one call shares, read by the threads.
struct criterion_inputs {
  frames_view log_probs;
  const int64_t* lengths = nullptr;
  const double* numerator_cost = nullptr;
  batch_fsa numerator;
  batch_fsa denominator;
  /// The denominator of every sequence when `denominator` has one sequence,
  /// its layout and its highest emission.
  const criterion::wfsa* shared = nullptr;
  const criterion::frame_graph* shared_layout = nullptr;
  uint32_t shared_max_emission = 0;
  criterion::sequence_kind kind = criterion::sequence_kind::mmi;
  criterion::sequence_scales scales;
  /// The call's sequences whose denominator ran in probability space, and
  /// those that ran in log space (counted by every thread).
  std::atomic<uint64_t> scaled{0};
  std::atomic<uint64_t> log_space{0};
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

/// Computes the sequences `block` into loss[b] and gradient [T, B, D]
/// (one scaled run over the shared denominator for all of them); returns an
/// error message, empty on success.
std::string run_block(worker& w, criterion_inputs& in, const std::vector<int64_t>& block,
                      double* loss, float* gradient) {
  const frames_view& x = in.log_probs;
  const size_t count = block.size();
  w.edges.resize(count);
  w.numerators.clear();
  w.denominators.resize(count);
  w.names.resize(count);
  w.jobs.clear();
  std::vector<int64_t> members;
  for (size_t i = 0; i < count; ++i) {
    const int64_t b = block[i];
    const int64_t length = in.lengths[b];
    for (int64_t t = length; t < x.frames; ++t)
      std::memset(gradient + (t * x.batch + b) * x.classes, 0,
                  static_cast<size_t>(x.classes) * sizeof(float));
    if (length == 0) {
      // Nothing to tell apart: 0 when the numerator has the empty path.
      loss[b] = in.numerator.start(b) == in.numerator.end(b)
                    ? 0.0
                    : std::numeric_limits<double>::infinity();
      continue;
    }
    auto numerator = sequence_fsa(in.numerator, b, w.edges[i]);
    if (!numerator)
      return "fsa, sequence " + text(b) + ": " + error_message(numerator.error());
    w.numerators.push_back(std::move(*numerator));
    members.push_back(b);
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const int64_t b = members[i];
    const criterion::wfsa* denominator = in.shared;
    uint32_t den_max_emission = in.shared_max_emission;
    if (denominator == nullptr) {
      sequence_wfsa(in.denominator, b, w.denominators[i]);
      denominator = &w.denominators[i];
      den_max_emission = max_emission(w.denominators[i]);
    }
    w.names[i] = "sequence " + text(b) + " of log_probs";
    w.jobs.push_back({{w.names[i], &w.numerators[i], denominator, den_max_emission,
                       in.numerator_cost[b], in.shared_layout},
                      x.data + b * x.sequence_stride,
                      in.lengths[b],
                      x.classes,
                      x.frame_stride,
                      gradient + b * x.classes,
                      x.batch * x.classes});
  }
  w.results.resize(w.jobs.size());
  const auto before = w.workspace.stats();
  if (auto err = criterion::sequence_loss_block(in.kind, in.scales, {w.jobs.data(), w.jobs.size()},
                                                {w.results.data(), w.results.size()}, w.workspace))
    return error_message(err);
  in.scaled += w.workspace.stats().scaled - before.scaled;
  in.log_space += w.workspace.stats().log_space - before.log_space;
  for (size_t i = 0; i < members.size(); ++i)
    loss[members[i]] = w.results[i].loss;
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
  std::optional<criterion::frame_graph> shared_layout;
  if (graphs == 1) {
    sequence_wfsa(in.denominator, 0, shared);
    in.shared = &shared;
    in.shared_max_emission = max_emission(shared);
    shared_layout.emplace(criterion::lay_out(shared));
    in.shared_layout = &*shared_layout;
  }

  py::array_t<double> loss(batch);
  py::array_t<float> gradient({in.log_probs.frames, batch, in.log_probs.classes});
  double* loss_out = loss.mutable_data();
  float* gradient_out = gradient.mutable_data();
  const auto count = static_cast<size_t>(std::max<int64_t>(1, std::min(num_threads, batch)));
  // A shared denominator: one block per thread, the sequences dealt out
  // longest first so that the blocks' frames and work match. Otherwise a
  // block per sequence, taken longest first.
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return in.lengths[x] > in.lengths[y]; });
  std::vector<std::vector<int64_t>> blocks(in.shared ? count : static_cast<size_t>(batch));
  for (size_t i = 0; i < order.size(); ++i)
    blocks[i % blocks.size()].push_back(order[i]);
  auto workers = worker_cache<worker>::take(count);
  const auto work = [&](int64_t block) {
    int64_t sum = 0;
    for (const int64_t b : blocks[static_cast<size_t>(block)]) {
      const int64_t den_edges =
          in.shared ? in.denominator.edge_count(0) : in.denominator.edge_count(b);
      sum += in.lengths[b] * (in.numerator.edge_count(b) + den_edges + 1);
    }
    return sum;
  };
  std::string error;
  {
    py::gil_scoped_release no_gil;
    error = run_sequences(count, static_cast<int64_t>(blocks.size()), work,
                          [&](size_t w, int64_t block) {
                            return run_block(*workers[w], in, blocks[static_cast<size_t>(block)],
                                             loss_out, gradient_out);
                          });
  }
  worker_cache<worker>::give_back(workers);
  if (!error.empty())
    throw py::value_error(error);
  return py::make_tuple(loss, gradient, in.scaled.load(), in.log_space.load());
}

} // namespace

void bind_sequence_loss(py::module_& m) {
  m.def("sequence_loss_cpu", &sequence_loss_cpu, py::arg("log_probs"), py::arg("seq_lens"),
        py::arg("edges"), py::arg("weights"), py::arg("start_end_states"), py::arg("num_states"),
        py::arg("den_edges"), py::arg("den_weights"), py::arg("den_start_end_states"),
        py::arg("den_num_states"), py::arg("num_cost"), py::arg("criterion"),
        py::arg("am_scale") = 1.0, py::arg("boost") = 0.0, py::arg("num_threads") = 1,
        "Loss float64 [B], its gradient float32 [T, B, D] with respect to log_probs (zero in "
        "the padding frames and for skipped sequences, whose loss is inf), and how many "
        "sequences' denominators ran in probability space and in log space, of criterion mmi, "
        "bmmi or smbr over float32 log_probs [T, B, D]: numerators in the batch FSA layout "
        "(edges, weights, start_end_states, num_states; each numerator path pays num_cost[b]), "
        "the denominator in the same layout with one sequence (shared by all) or B. Raises "
        "ValueError naming a malformed argument.");
}

} // namespace sprintrt::python
