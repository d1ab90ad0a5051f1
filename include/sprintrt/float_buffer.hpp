#pragma once

/// @file
/// The float32 values behind tensors and segment slices: either owned (a
/// vector) or borrowed from memory that an owner keeps alive, such as a
/// numpy array handed in by the Python module, so that a trainer's batch
/// reaches the workers without being copied first.

#include <cassert>
#include <cstddef>
#include <memory>
#include <vector>

namespace sprintrt {

/// A fixed-size run of float32 values. Not copyable: it is shared through
/// `float_storage`, and the address of its values never changes.
class float_buffer {
public:
  /// `count` values, all `value`, owned.
  explicit float_buffer(size_t count = 0, float value = 0.0f)
      : owned_(count, value), data_(owned_.data()), size_(count) {}

  /// Adopts `values` (moved, not copied).
  explicit float_buffer(std::vector<float> values)
      : owned_(std::move(values)), data_(owned_.data()), size_(owned_.size()) {}

  /// Borrows `[data, data + count)`, which `owner` (not null) keeps alive:
  /// the buffer holds `owner` until it is destroyed.
  float_buffer(float* data, size_t count, std::shared_ptr<const void> owner)
      : owner_(std::move(owner)), data_(data), size_(count) {
    assert(owner_ != nullptr);
  }

  float_buffer(const float_buffer&) = delete;
  float_buffer& operator=(const float_buffer&) = delete;

  /// Returns the first value.
  float* data() noexcept { return data_; }
  const float* data() const noexcept { return data_; }

  /// Returns the number of values.
  size_t size() const noexcept { return size_; }

  /// Returns whether there are no values.
  bool empty() const noexcept { return size_ == 0; }

  /// Returns value `i`, which must be below `size()`.
  float& operator[](size_t i) noexcept { return data_[i]; }
  float operator[](size_t i) const noexcept { return data_[i]; }

  /// Iteration over the values.
  float* begin() noexcept { return data_; }
  float* end() noexcept { return data_ + size_; }
  const float* begin() const noexcept { return data_; }
  const float* end() const noexcept { return data_ + size_; }

  /// Returns a copy of the values.
  std::vector<float> to_vector() const { return {begin(), end()}; }

  /// Returns whether the values are borrowed from an owner.
  bool borrowed() const noexcept { return owner_ != nullptr; }

private:
  std::vector<float> owned_;
  std::shared_ptr<const void> owner_;
  float* data_;
  size_t size_;
};

/// Shared float32 storage (a batch's input or output buffer).
using float_storage = std::shared_ptr<float_buffer>;

/// Returns new storage of `count` values, all `value`.
inline float_storage make_storage(size_t count, float value = 0.0f) {
  return std::make_shared<float_buffer>(count, value);
}

/// Returns new storage adopting `values`.
inline float_storage make_storage(std::vector<float> values) {
  return std::make_shared<float_buffer>(std::move(values));
}

} // namespace sprintrt
