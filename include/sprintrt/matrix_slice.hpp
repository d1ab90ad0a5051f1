#pragma once

/// @file
/// A matrix of float32 rows inside storage that all parties share, so that
/// a segment of a [T, B, D] batch is sent without being copied out first,
/// and its error signal is written straight into the batch's output.

#include <cstddef>

#include "sprintrt/float_buffer.hpp"

namespace sprintrt {

/// A `rows` x `cols` matrix inside shared storage: element (r, c) is
/// `(*storage)[offset + r * row_stride + c]`. Segment b of a time-major
/// [T, B, D] batch is {storage, b * D, T_b, D, B * D}.
struct matrix_slice {
  float_storage storage;
  size_t offset = 0;
  size_t rows = 0;
  size_t cols = 0;
  size_t row_stride = 0;

  /// A whole contiguous rows x cols matrix in new zeroed storage.
  static matrix_slice dense(size_t rows, size_t cols) {
    return {make_storage(rows * cols), 0, rows, cols, cols};
  }

  /// Returns the first element of row `r`.
  float* row(size_t r) const noexcept { return storage->data() + offset + r * row_stride; }

  /// Returns whether the slice has storage and lies within it, rows not
  /// overlapping.
  bool valid() const noexcept {
    if (!storage || rows == 0 || cols == 0 || row_stride < cols)
      return false;
    // offset + (rows - 1) * row_stride + cols <= size, without overflow.
    if (offset > storage->size() || cols > storage->size() - offset)
      return false;
    return rows - 1 <= (storage->size() - offset - cols) / row_stride;
  }
};

} // namespace sprintrt
