#include "kernel_arrays.hpp"

#include <cstdint>
#include <string>

namespace sprintrt::python {

namespace py = pybind11;

namespace {

std::string text(int64_t value) {
  return std::to_string(value);
}

} // namespace

criterion::frames_view read_log_probs(const py::array& log_probs) {
  if (!log_probs.dtype().is(py::dtype::of<float>()))
    throw py::type_error("log_probs must be float32, got " +
                         py::str(log_probs.dtype()).cast<std::string>());
  require_shape(log_probs, {-1, -1, -1}, "log_probs", "T, B, D");
  constexpr auto item = static_cast<py::ssize_t>(sizeof(float));
  // A class axis of extent 1 may have any stride (torch gives it one).
  const bool unit_stride = log_probs.shape(2) == 1 || log_probs.strides(2) == item;
  if (!unit_stride || log_probs.strides(0) < 0 || log_probs.strides(1) < 0 ||
      log_probs.strides(0) % item != 0 || log_probs.strides(1) % item != 0 ||
      reinterpret_cast<uintptr_t>(log_probs.data()) % alignof(float) != 0)
    throw py::value_error("log_probs must be aligned, with non-negative strides, contiguous "
                          "along D");
  criterion::frames_view view;
  view.data = static_cast<const float*>(log_probs.data());
  view.frames = log_probs.shape(0);
  view.batch = log_probs.shape(1);
  view.classes = log_probs.shape(2);
  view.frame_stride = log_probs.strides(0) / item;
  view.sequence_stride = log_probs.strides(1) / item;
  return view;
}

void require_shape(const py::array& array, std::initializer_list<int64_t> shape, const char* name,
                   const char* axes) {
  bool ok = array.ndim() == static_cast<py::ssize_t>(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i)
    ok = shape.begin()[i] < 0 || array.shape(i) == shape.begin()[i];
  if (ok)
    return;
  std::string got;
  for (py::ssize_t i = 0; i < array.ndim(); ++i)
    got += (i == 0 ? "" : ", ") + text(array.shape(i));
  throw py::value_error(std::string{name} + " must have shape [" + axes + "], got [" + got + "]");
}

criterion::batch_fsa batch_fsa_of(const char* name, const int64_array& edges,
                                  const double_array& weights, const int64_array& start_end_states,
                                  int64_t num_states) {
  return {name,
          edges.data(),
          edges.shape(1),
          weights.data(),
          start_end_states.data(),
          start_end_states.shape(1),
          num_states,
          {},
          {}};
}

} // namespace sprintrt::python
