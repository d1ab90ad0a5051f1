#pragma once

/// @file
/// The dense views the criteria compute on. Posteriors and error
/// signals are row-major [T, D] float32, exactly as on the wire (C order), so a
/// server maps its receive and send buffers without copying; `Eigen::Ref`
/// accepts a `Map` over such a buffer, a matrix or a block of rows alike.

#include <Eigen/Core>

namespace sprintrt::criterion {

/// A row-major [T, D] float matrix: frames are rows.
using row_matrix_f = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A row-major [T, D] double matrix.
using row_matrix_d = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Read-only log-posteriors [T, D] of one segment.
using log_posteriors_ref = Eigen::Ref<const row_matrix_f>;

/// Caller-owned output [T, D] for an error signal.
using error_signal_ref = Eigen::Ref<row_matrix_f>;

/// Caller-owned output [T, D] for state occupancies (gamma), in double.
using occupancy_ref = Eigen::Ref<row_matrix_d>;

} // namespace sprintrt::criterion
