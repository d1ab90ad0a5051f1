// `_sprintrt.fsa_loss_cpu`: the caller's arrays checked for their shapes and
// handed to `criterion::batch_loss` (the full sum, threaded over the
// sequences) with the GIL released.

#include "fsa_loss_binding.hpp"

#include <pybind11/numpy.h>

#include <string>

#include "criterion/batch_fsa.hpp"
#include "criterion/batch_loss.hpp"
#include "kernel_arrays.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

py::tuple fsa_loss_cpu(const py::array& log_probs, const int64_array& seq_lens,
                       const int64_array& edges, const double_array& weights,
                       const int64_array& start_end_states, int64_t num_states,
                       int64_t num_threads) {
  criterion::batch_loss_inputs in;
  in.log_probs = read_log_probs(log_probs);
  const int64_t batch = in.log_probs.batch;
  require_shape(seq_lens, {batch}, "seq_lens", "B");
  require_shape(edges, {4, -1}, "fsa.edges", "4, E");
  require_shape(weights, {edges.shape(1)}, "fsa.weights", "E");
  require_shape(start_end_states, {2, batch}, "fsa.start_end_states", "2, B");
  in.lengths = seq_lens.data();
  auto fsa = batch_fsa_of("fsa", edges, weights, start_end_states, num_states);
  in.numerator = &fsa;
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
  return py::make_tuple(loss, gradient);
}

} // namespace

void bind_fsa_loss(py::module_& m) {
  m.def("fsa_loss_cpu", &fsa_loss_cpu, py::arg("log_probs"), py::arg("seq_lens"), py::arg("edges"),
        py::arg("weights"), py::arg("start_end_states"), py::arg("num_states"),
        py::arg("num_threads") = 1,
        "Full-sum loss float64 [B] and its gradient float32 [T, B, D] (-occupancy; zero in the "
        "padding frames and for sequences without a path, whose loss is inf) of float32 "
        "log_probs [T, B, D] (any strides, contiguous along D) over a batch FSA: edges int "
        "[4, E] (from, to, emission, sequence), weights float [E] (costs, -log), "
        "start_end_states int [2, B] (each sequence's states are start..end, end its final "
        "state, the ranges disjoint and below num_states). Runs sprintrt's full-sum kernel "
        "(criterion::batch_loss) on num_threads threads with the GIL released; raises "
        "ValueError naming a malformed argument.");
}

} // namespace sprintrt::python
