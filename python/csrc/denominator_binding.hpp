#pragma once

/// @file
/// The denominator graphs of `sprintrt.torch` (label_lm_denominator,
/// hypotheses_denominator), built by sprint-sim's own code: `_sprintrt.LabelLm`
/// (the label n-gram of `--*.denominator=label-lm`, estimated from label
/// sequences) and `_sprintrt.hypotheses_graph` (a file of hypotheses' graph),
/// each expanded by sprint-sim's CTC or HMM topology and returned in the layout
/// of one sequence of a batch FSA: edges int64 [4, E] (from, to, emission, 0),
/// weights float64 [E], start state 0, final state num_states - 1.

#include <pybind11/pybind11.h>

namespace sprintrt::python {

/// Defines `LabelLm` and `hypotheses_graph` in `m`.
void bind_denominators(pybind11::module_& m);

} // namespace sprintrt::python
