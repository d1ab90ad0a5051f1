#pragma once

/// @file
/// `_sprintrt.sequence_loss_cpu`: the sequence-discriminative criteria (MMI,
/// boosted MMI, sMBR; docs/sequence-training.md) of a batch over numerator
/// FSAs and a denominator graph, either one shared by every sequence or one
/// per sequence, computed by sprint-sim's own `criterion::sequence_loss`, threaded
/// over the sequences with the GIL released. The CPU half of
/// `sprintrt.torch.fsa_loss(..., criterion=...)`.

#include <pybind11/pybind11.h>

namespace sprintrt::python {

/// Defines `sequence_loss_cpu` in `m`.
void bind_sequence_loss(pybind11::module_& m);

} // namespace sprintrt::python
