#include "denominator_binding.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "criterion/corpus.hpp"
#include "criterion/label_acceptor.hpp"
#include "criterion/label_lm.hpp"
#include "criterion/wfsa.hpp"
#include "sprintrt/error.hpp"
#include "topology_arguments.hpp"

namespace sprintrt::python {

namespace {

namespace py = pybind11;

using label_sequences = std::vector<std::vector<int64_t>>;

/// `graph`, expanded from `acceptor`, as a dict of the batch FSA layout's
/// arrays of one sequence.
py::dict graph_arrays(const criterion::topology& topology,
                      const criterion::label_acceptor& acceptor, const std::string& owner) {
  auto expanded = topology.expand(owner, acceptor);
  if (!expanded)
    throw py::value_error(error_message(expanded.error()));
  const criterion::wfsa graph = criterion::single_ended(*expanded);
  const auto count = static_cast<py::ssize_t>(graph.edges.size());
  py::array_t<int64_t> edges({py::ssize_t{4}, count});
  py::array_t<double> weights(count);
  auto e = edges.mutable_unchecked<2>();
  auto w = weights.mutable_unchecked<1>();
  for (py::ssize_t i = 0; i < count; ++i) {
    const auto& edge = graph.edges[static_cast<size_t>(i)];
    e(0, i) = edge.from;
    e(1, i) = edge.to;
    e(2, i) = edge.emission;
    e(3, i) = 0;
    w(i) = edge.weight;
  }
  py::dict out;
  out["num_states"] = graph.num_states();
  out["edges"] = edges;
  out["weights"] = weights;
  return out;
}

/// A label n-gram estimated from label sequences (criterion::label_lm).
class label_lm_binding {
public:
  label_lm_binding(const label_sequences& sequences, uint32_t order, double smoothing) {
    std::string text;
    for (size_t i = 0; i < sequences.size(); ++i) {
      text += "s" + std::to_string(i) + "\t";
      for (const uint32_t label : to_labels(sequences[i], "label sequence " + std::to_string(i)))
        text += std::to_string(label) + " ";
      text += "\n";
    }
    auto segments = criterion::corpus::from_string(text, "label_sequences");
    if (!segments)
      throw py::value_error(error_message(segments.error()));
    auto lm =
        criterion::label_lm::estimate(*segments, criterion::label_lm_options{order, smoothing});
    if (!lm)
      throw py::value_error(error_message(lm.error()));
    lm_.emplace(std::move(*lm));
  }

  std::vector<uint32_t> vocabulary() const { return lm_->vocabulary(); }

  double cost(const std::vector<int64_t>& labels) const {
    return lm_->cost(to_labels(labels, "labels"));
  }

  py::dict graph(double lm_scale, const std::string& topology, int64_t blank_index,
                 const py::dict& hmm) const {
    if (!std::isfinite(lm_scale) || lm_scale < 0)
      throw py::value_error("lm_scale must be a finite number >= 0, got " +
                            std::to_string(lm_scale));
    const auto expansion = make_topology(topology, blank_index, hmm);
    return graph_arrays(*expansion, lm_->acceptor(lm_scale), "label-lm");
  }

private:
  std::optional<criterion::label_lm> lm_;
};

py::dict hypotheses_graph(const label_sequences& hypotheses, const std::vector<double>& costs,
                          double lm_scale, const std::string& topology, int64_t blank_index,
                          const py::dict& hmm) {
  if (costs.size() != hypotheses.size())
    throw py::value_error("costs has " + std::to_string(costs.size()) + " entries for " +
                          std::to_string(hypotheses.size()) + " hypotheses");
  if (hypotheses.empty())
    throw py::value_error("hypotheses is empty (a denominator needs at least one)");
  if (!std::isfinite(lm_scale) || lm_scale < 0)
    throw py::value_error("lm_scale must be a finite number >= 0, got " + std::to_string(lm_scale));
  std::vector<criterion::hypothesis> list;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const std::string owner = "hypothesis " + std::to_string(i);
    if (!std::isfinite(costs[i]))
      throw py::value_error(owner + ": cost " + std::to_string(costs[i]) +
                            " is not a finite number");
    list.push_back({to_labels(hypotheses[i], owner), costs[i]});
    for (size_t j = 0; j < i; ++j)
      if (list[j].labels == list[i].labels)
        throw py::value_error(owner + " repeats hypothesis " + std::to_string(j));
  }
  const auto expansion = make_topology(topology, blank_index, hmm);
  return graph_arrays(*expansion, criterion::hypotheses_acceptor(list, lm_scale), "hypotheses");
}

} // namespace

void bind_denominators(py::module_& m) {
  py::class_<label_lm_binding>(m, "LabelLm",
                               "The label n-gram of sprint-sim's label-lm denominator "
                               "(docs/sequence-training.md), estimated from label sequences.")
      .def(py::init<const label_sequences&, uint32_t, double>(), py::arg("label_sequences"),
           py::arg("order") = 2, py::arg("smoothing") = 1.0)
      .def_property_readonly("vocabulary", &label_lm_binding::vocabulary,
                             "The labels of the sequences, ascending.")
      .def("cost", &label_lm_binding::cost, py::arg("labels"),
           "-log P_LM(labels), the end symbol included; inf for probability 0.")
      .def("graph", &label_lm_binding::graph, py::arg("lm_scale"), py::arg("topology"),
           py::arg("blank_index"), py::arg("hmm"),
           "The n-gram composed with the topology, costs times lm_scale, as a dict "
           "(num_states, edges int64 [4, E], weights float64 [E]) of one sequence with start "
           "state 0 and final state num_states - 1.");
  m.def("hypotheses_graph", &hypotheses_graph, py::arg("hypotheses"), py::arg("costs"),
        py::arg("lm_scale"), py::arg("topology"), py::arg("blank_index"), py::arg("hmm"),
        "The graph of the hypotheses (distinct label sequences, each with a cost times "
        "lm_scale) composed with the topology, as LabelLm.graph gives it.");
}

} // namespace sprintrt::python
