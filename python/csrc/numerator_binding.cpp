#include "numerator_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "criterion/fsa.hpp"
#include "sprintrt/error.hpp"
#include "topology_arguments.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

/// Each of `sequences`' FSA under the topology, as (num_states, num_edges,
/// edges uint32 [3 * E], weights float32 [E]); throws `ValueError` naming
/// the sequence for labels the topology refuses.
py::list topology_fsas(const std::vector<std::vector<int64_t>>& sequences,
                       const std::string& topology, int64_t blank_index, const py::dict& hmm) {
  const auto expansion = make_topology(topology, blank_index, hmm);
  py::list out;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const std::string owner = "label sequence " + std::to_string(i);
    auto built = expansion->build(owner, to_labels(sequences[i], owner));
    if (!built)
      throw py::value_error(error_message(built.error()));
    const auto flat = built->flat_edges();
    const auto costs = built->weights();
    py::array_t<uint32_t> edges(static_cast<py::ssize_t>(flat.size()));
    py::array_t<float> weights(static_cast<py::ssize_t>(costs.size()));
    std::copy(flat.begin(), flat.end(), edges.mutable_data());
    std::copy(costs.begin(), costs.end(), weights.mutable_data());
    out.append(py::make_tuple(built->num_states(), built->num_edges(), edges, weights));
  }
  return out;
}

} // namespace

void bind_numerators(py::module_& m) {
  m.def("topology_fsas", &topology_fsas, py::arg("sequences"), py::arg("topology"),
        py::arg("blank_index"), py::arg("hmm"),
        "Each label sequence's FSA under sprint-sim's CTC or HMM topology, as librasr's tuple "
        "(num_states, num_edges, edges uint32 [3*E], weights float32 [E]).");
}

} // namespace sprintrt::python
