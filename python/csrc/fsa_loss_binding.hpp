#pragma once

/// @file
/// `_sprintrt.fsa_loss_cpu`: the full-sum loss and occupancies of a batch FSA
/// in the WeightedFsa layout (edges [4, E] = from, to, emission, sequence;
/// states numbered over the whole batch, sequence b's from
/// start_end_states[0, b] to start_end_states[1, b]) over log-probabilities
/// [T, B, D], computed by sprintrt's own kernel `criterion::full_sum_engine`, one
/// sequence at a time, threaded over the sequences with the GIL released. The
/// CPU half of `sprintrt.torch.fsa_loss` (python/sprintrt/fsa_loss.py).

#include <pybind11/pybind11.h>

namespace sprintrt::python {

/// Defines `fsa_loss_cpu` in `m`.
void bind_fsa_loss(pybind11::module_& m);

} // namespace sprintrt::python
