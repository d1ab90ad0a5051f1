#pragma once

/// @file
/// The trainer's side of sequence training: the error signal from a train
/// reply. A pure function of tensors, usable without any actor.

#include <cstdint>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/tensor.hpp"

namespace sprintrt {

/// The trainer's error signal from a train reply: `exp(log_posteriors) -
/// hat_y` for frames t < lengths[b] of column b, zero elsewhere; both tensors
/// [T, B, D] of the same shape, `lengths` [B] each in 0..T. Errors
/// (`invalid_input`) name the mismatching shape or length.
caf::expected<tensor> seqtrain_error_signal(const tensor& log_posteriors, const tensor& hat_y,
                                            const std::vector<int64_t>& lengths);

} // namespace sprintrt
