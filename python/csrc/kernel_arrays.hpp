#pragma once

/// @file
/// What the bindings of the CPU loss kernels of `sprintrt.torch.fsa_loss`
/// share: the checked view of log_probs [T, B, D] and the shape checks of
/// the arrays (the kernels themselves: criterion/batch_loss.hpp).

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>

#include "criterion/batch_loss.hpp"

namespace sprintrt::python {

/// The kernels' integer and float inputs: C-contiguous, converted from any
/// dtype numpy can cast.
using int64_array =
    pybind11::array_t<int64_t, pybind11::array::c_style | pybind11::array::forcecast>;
using double_array =
    pybind11::array_t<double, pybind11::array::c_style | pybind11::array::forcecast>;

/// Returns `log_probs` as a view; throws `TypeError` unless it is float32 and
/// `ValueError` unless it is 3-D, aligned, with non-negative strides and
/// contiguous along D.
criterion::frames_view read_log_probs(const pybind11::array& log_probs);

/// Throws `ValueError` unless `array` has `shape` (-1: any extent), naming
/// it and its `axes` ("4, E").
void require_shape(const pybind11::array& array, std::initializer_list<int64_t> shape,
                   const char* name, const char* axes);

/// The batch FSA `name` ("fsa", "den_fsa") over the caller's arrays (shapes
/// already checked): its sequences are start_end_states' columns.
criterion::batch_fsa batch_fsa_of(const char* name, const int64_array& edges,
                                  const double_array& weights, const int64_array& start_end_states,
                                  int64_t num_states);

} // namespace sprintrt::python
