#pragma once

/// @file
/// Eigen views of tensors and slices, without copies. Kept apart from
/// `tensor.hpp` so that code which only moves tensors around does not pay
/// for compiling Eigen.

#include <Eigen/Core>

#include "sprintrt/error.hpp"
#include "sprintrt/matrix_slice.hpp"
#include "sprintrt/tensor.hpp"

namespace sprintrt {

/// A row-major float matrix type: rows are frames, as on the wire.
using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A writable view of rows that may be strided (one segment of a batch).
using matrix_view = Eigen::Map<row_matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

/// A read-only view likewise.
using const_matrix_view = Eigen::Map<const row_matrix, Eigen::Unaligned, Eigen::OuterStride<>>;

/// Views a slice (e.g. `segment_slice(batch, b, frames)`) as an Eigen matrix.
/// The slice must be valid (`slice.valid()`).
inline matrix_view as_matrix(const matrix_slice& slice) {
  return {slice.row(0), static_cast<Eigen::Index>(slice.rows),
          static_cast<Eigen::Index>(slice.cols),
          Eigen::OuterStride<>{static_cast<Eigen::Index>(slice.row_stride)}};
}

/// Views a 2-D tensor as an Eigen matrix; fails with `invalid_input` for
/// another rank.
inline caf::expected<matrix_view> as_matrix(tensor& t) {
  if (t.rank() != 2)
    return make_error(errc::invalid_input,
                      "a matrix view needs a 2-d tensor, got shape " + t.shape_string());
  return matrix_view{t.data(), static_cast<Eigen::Index>(t.dim(0)),
                     static_cast<Eigen::Index>(t.dim(1)),
                     Eigen::OuterStride<>{static_cast<Eigen::Index>(t.dim(1))}};
}

/// Views the first `frames` frames of segment `b` of a [T, B, D] tensor as a
/// `frames` x D matrix (row stride B * D). Fails with `invalid_input` for
/// another rank, `b >= B` or `frames > T`.
inline caf::expected<matrix_view> segment_matrix(tensor& batch, size_t b, size_t frames) {
  if (batch.rank() != 3 || b >= batch.dim(1) || frames > batch.dim(0) || frames == 0)
    return make_error(errc::invalid_input, "segment " + std::to_string(b) + " with " +
                                               std::to_string(frames) +
                                               " frames of a tensor of "
                                               "shape " +
                                               batch.shape_string());
  return as_matrix(segment_slice(batch, b, frames));
}

} // namespace sprintrt
