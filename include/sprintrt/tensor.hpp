#pragma once

/// @file
/// Dense float32 tensors in C order whose storage is shared: moving one
/// between a trainer and the actors never copies its data, and a view of one
/// segment of a [T, B, D] batch is just an offset and a stride into it.
/// `sprintrt/tensor_eigen.hpp` maps tensors onto Eigen without copies.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/matrix_slice.hpp"

namespace sprintrt {

/// A float32 tensor of any rank, C order, with shared storage. Copies of a
/// tensor share the storage (use `clone` for a deep copy).
class tensor {
public:
  /// An empty tensor of shape [0].
  tensor() : shape_{0}, storage_(make_storage(0)) {}

  /// A tensor of `shape` filled with zeros.
  static tensor zeros(std::vector<size_t> shape);

  /// Adopts `data` (moved, not copied) as a tensor of `shape`. Fails with
  /// `invalid_input` if the sizes differ.
  static caf::expected<tensor> from_vector(std::vector<float> data, std::vector<size_t> shape);

  /// A tensor of `shape` over `storage`, shared and not copied (e.g.
  /// memory borrowed from a numpy array). Fails with `invalid_input` if the
  /// sizes differ.
  static caf::expected<tensor> from_storage(float_storage storage, std::vector<size_t> shape);

  /// Returns the extents.
  const std::vector<size_t>& shape() const noexcept { return shape_; }

  /// Returns the number of dimensions.
  size_t rank() const noexcept { return shape_.size(); }

  /// Returns extent `i`; `i` must be below `rank()`.
  size_t dim(size_t i) const noexcept { return shape_[i]; }

  /// Returns the number of elements.
  size_t size() const noexcept { return storage_->size(); }

  /// Returns the elements.
  float* data() noexcept { return storage_->data(); }
  const float* data() const noexcept { return storage_->data(); }

  /// Returns the shared storage (for slices handed to workers).
  const float_storage& storage() const noexcept { return storage_; }

  /// Returns a deep copy.
  tensor clone() const;

  /// Returns whether no other tensor or slice shares the storage (then it
  /// may be reused as an output without surprising anyone).
  bool unique() const noexcept { return storage_.use_count() == 1; }

  /// Returns the shape as text, e.g. "[7, 2, 5]".
  std::string shape_string() const;

private:
  tensor(std::vector<size_t> shape, float_storage storage)
      : shape_(std::move(shape)), storage_(std::move(storage)) {}

  std::vector<size_t> shape_;
  float_storage storage_;
};

/// Returns `shape` as text, e.g. "[7, 2, 5]".
std::string shape_string(const std::vector<size_t>& shape);

/// Segment `b` of a time-major [T, B, D] tensor, its first `frames` frames:
/// a `frames` x D slice with row stride B * D. `b` and `frames` must be in
/// range.
matrix_slice segment_slice(const tensor& batch, size_t b, size_t frames);

} // namespace sprintrt
