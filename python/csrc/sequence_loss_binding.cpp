// `_sprintrt.sequence_loss_cpu`: the caller's arrays checked for their shapes
// and handed to `criterion::batch_loss` (MMI, boosted MMI or sMBR, threaded
// over blocks of the batch) with the GIL released.

#include "sequence_loss_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>

#include "criterion/batch_fsa.hpp"
#include "criterion/batch_loss.hpp"
#include "kernel_arrays.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

criterion::sequence_kind parse_kind(const std::string& criterion) {
  if (criterion == "mmi")
    return criterion::sequence_kind::mmi;
  if (criterion == "bmmi")
    return criterion::sequence_kind::bmmi;
  if (criterion == "smbr")
    return criterion::sequence_kind::smbr;
  throw py::value_error("criterion must be mmi, bmmi or smbr, got '" + criterion + "'");
}

py::tuple sequence_loss_cpu(const py::array& log_probs, const int64_array& seq_lens,
                            const int64_array& edges, const double_array& weights,
                            const int64_array& start_end_states, int64_t num_states,
                            const int64_array& den_edges, const double_array& den_weights,
                            const int64_array& den_start_end_states, int64_t den_num_states,
                            const double_array& num_cost, const std::string& criterion,
                            double am_scale, double boost, int64_t num_threads) {
  criterion::batch_loss_inputs in;
  in.log_probs = read_log_probs(log_probs);
  const int64_t batch = in.log_probs.batch;
  in.kind = parse_kind(criterion);
  in.scales.am = am_scale;
  in.scales.boost = boost;
  if (auto problem = criterion::check_scales(*in.kind, in.scales); !problem.empty())
    throw py::value_error(problem);
  require_shape(seq_lens, {batch}, "seq_lens", "B");
  require_shape(edges, {4, -1}, "fsa.edges", "4, E");
  require_shape(weights, {edges.shape(1)}, "fsa.weights", "E");
  require_shape(start_end_states, {2, batch}, "fsa.start_end_states", "2, B");
  require_shape(den_edges, {4, -1}, "den_fsa.edges", "4, E");
  require_shape(den_weights, {den_edges.shape(1)}, "den_fsa.weights", "E");
  require_shape(den_start_end_states, {2, -1}, "den_fsa.start_end_states", "2, N");
  require_shape(num_cost, {batch}, "num_cost", "B");
  in.lengths = seq_lens.data();
  auto numerator = batch_fsa_of("fsa", edges, weights, start_end_states, num_states);
  auto denominator =
      batch_fsa_of("den_fsa", den_edges, den_weights, den_start_end_states, den_num_states);
  in.numerator = &numerator;
  in.denominator = &denominator;
  in.numerator_cost = num_cost.data();
  in.threads = num_threads;
  py::array_t<double> loss(batch);
  py::array_t<float> gradient({in.log_probs.frames, batch, in.log_probs.classes});
  double* loss_out = loss.mutable_data();
  float* gradient_out = gradient.mutable_data();
  caf::expected<criterion::batch_loss_counts> done{criterion::batch_loss_counts{}};
  {
    py::gil_scoped_release no_gil;
    done = criterion::batch_loss(in, loss_out, gradient_out);
  }
  if (!done)
    throw py::value_error(error_message(done.error()));
  return py::make_tuple(loss, gradient, done->scaled, done->log_space);
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
        "the denominator in the same layout with one sequence (shared by all) or B. Runs "
        "criterion::batch_loss with the GIL released; raises ValueError naming a malformed "
        "argument.");
}

} // namespace sprintrt::python
