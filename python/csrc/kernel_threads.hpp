#pragma once

/// @file
/// What the CPU loss kernels of `sprintrt.torch.fsa_loss` share: the checked
/// view of log_probs [T, B, D], the shape and length checks, workers kept
/// between calls, and the run over a batch's sequences on several threads.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "criterion/matrix_views.hpp"

namespace sprintrt::python {

/// The kernels' integer and float inputs: C-contiguous, converted from any
/// dtype numpy can cast.
using int64_array =
    pybind11::array_t<int64_t, pybind11::array::c_style | pybind11::array::forcecast>;
using double_array =
    pybind11::array_t<double, pybind11::array::c_style | pybind11::array::forcecast>;

/// log_probs [T, B, D], float32, contiguous along D: element (t, b, k) at
/// t * frame_stride + b * sequence_stride + k.
struct frames_view {
  /// The first element.
  const float* data = nullptr;
  /// T, B and D.
  int64_t frames = 0;
  int64_t batch = 0;
  int64_t classes = 0;
  /// Strides in elements.
  int64_t frame_stride = 0;
  int64_t sequence_stride = 0;

  /// Returns the first `length` frames of sequence b, read in place.
  Eigen::Map<const criterion::row_matrix_f, 0, Eigen::OuterStride<>>
  sequence(int64_t b, int64_t length) const {
    return {data + b * sequence_stride, length, classes, Eigen::OuterStride<>{frame_stride}};
  }
};

/// Returns `log_probs` as a view; throws `TypeError` unless it is float32 and
/// `ValueError` unless it is 3-D, aligned, with non-negative strides and
/// contiguous along D.
frames_view read_log_probs(const pybind11::array& log_probs);

/// Throws `ValueError` unless `array` has `shape` (-1: any extent), naming
/// it and its `axes` ("4, E").
void require_shape(const pybind11::array& array, std::initializer_list<int64_t> shape,
                   const char* name, const char* axes);

/// Throws `ValueError` unless every one of the `batch` lengths lies in
/// [0, frames].
void check_lengths(const int64_t* lengths, int64_t batch, int64_t frames);

/// Runs `task(worker, b)` for every sequence b < `batch` on `workers`
/// threads (the calling one among them), each thread with its own worker
/// index below `workers`; sequences of larger `work(b)` start first, so that
/// no thread starts a long one last. Returns the first sequence's error
/// message (what `task` returned or threw), empty if none. Call it without
/// the GIL.
std::string run_sequences(size_t workers, int64_t batch,
                          const std::function<int64_t(int64_t)>& work,
                          const std::function<std::string(size_t, int64_t)>& task);

/// Workspaces of one kind kept between calls (their buffers stay warm).
/// Taken and given back with the GIL held, which guards the list; never
/// destroyed, so that nothing runs at exit.
template <class Worker>
class worker_cache {
public:
  /// Returns `count` workers, reused where there are idle ones.
  static std::vector<std::unique_ptr<Worker>> take(size_t count) {
    auto& idle = list();
    std::vector<std::unique_ptr<Worker>> workers;
    while (workers.size() < count) {
      if (idle.empty()) {
        workers.push_back(std::make_unique<Worker>());
      } else {
        workers.push_back(std::move(idle.back()));
        idle.pop_back();
      }
    }
    return workers;
  }

  /// Keeps `workers` for the next call.
  static void give_back(std::vector<std::unique_ptr<Worker>>& workers) {
    for (auto& w : workers)
      list().push_back(std::move(w));
    workers.clear();
  }

private:
  static std::vector<std::unique_ptr<Worker>>& list() {
    static auto* workers = new std::vector<std::unique_ptr<Worker>>;
    return *workers;
  }
};

} // namespace sprintrt::python
