#include "kernel_threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <numeric>
#include <system_error>
#include <thread>

namespace sprintrt::python {

namespace py = pybind11;

namespace {

std::string text(int64_t value) {
  return std::to_string(value);
}

} // namespace

frames_view read_log_probs(const py::array& log_probs) {
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
  frames_view view;
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

void check_lengths(const int64_t* lengths, int64_t batch, int64_t frames) {
  for (int64_t b = 0; b < batch; ++b)
    if (lengths[b] < 0 || lengths[b] > frames)
      throw py::value_error("seq_lens[" + text(b) + "] is " + text(lengths[b]) + ", not in [0, " +
                            text(frames) + "] (log_probs' frames)");
}

std::string run_sequences(size_t workers, int64_t batch,
                          const std::function<int64_t(int64_t)>& work,
                          const std::function<std::string(size_t, int64_t)>& task) {
  std::vector<int64_t> schedule(batch);
  std::iota(schedule.begin(), schedule.end(), 0);
  std::stable_sort(schedule.begin(), schedule.end(),
                   [&](int64_t x, int64_t y) { return work(x) > work(y); });
  std::vector<std::string> errors(batch);
  std::atomic<size_t> next{0};
  const auto drain = [&](size_t worker) {
    for (size_t i = next++; i < schedule.size(); i = next++) {
      const int64_t b = schedule[i];
      try {
        errors[b] = task(worker, b);
      } catch (const std::exception& e) {
        errors[b] = "sequence " + text(b) + ": " + e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers; ++i) {
    try {
      threads.emplace_back(drain, i);
    } catch (const std::system_error&) {
      break; // No more threads to be had: the ones running take the rest.
    }
  }
  drain(0);
  for (auto& thread : threads)
    thread.join();
  for (const auto& error : errors)
    if (!error.empty())
      return error;
  return {};
}

} // namespace sprintrt::python
