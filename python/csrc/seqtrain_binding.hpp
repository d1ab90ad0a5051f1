#pragma once

/// @file
/// The sequence-training scheduler's bindings (see seqtrain_binding.cpp).

#include <pybind11/pybind11.h>

namespace sprintrt::python {

/// Registers `Scheduler`, `SeqTrainPart`, `SeqTrainBatch` and
/// `seqtrain_error_signal` in `m`.
void bind_seqtrain(pybind11::module_& m);

} // namespace sprintrt::python
