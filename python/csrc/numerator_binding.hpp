#pragma once

/// @file
/// The numerators of `sprintrt.torch.label_numerators`, built by sprint-sim's
/// own code: `_sprintrt.topology_fsas` turns label sequences into their FSAs
/// with the CTC or HMM topology (`criterion::topology::build`, what a
/// sprint-sim child exports for a corpus segment of those labels), as
/// librasr's tuples that `sprintrt.fsa_layouts` joins.

#include <pybind11/pybind11.h>

namespace sprintrt::python {

/// Defines `topology_fsas` in `m`.
void bind_numerators(pybind11::module_& m);

} // namespace sprintrt::python
