#pragma once

/// @file
/// The checks every computation over a segment's log-posteriors and FSA makes
/// before it starts, with the messages a user needs to find the bad value.

#include <string_view>

#include <Eigen/Core>

#include "criterion/fsa.hpp"
#include "criterion/matrix_views.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::criterion {

/// Checks log-posteriors of `segment`: at least one frame and one column, no
/// NaN, no +inf (an `invalid_input` error names the segment, frame and index).
/// -inf is valid: probability zero.
caf::error check_log_posteriors(std::string_view segment, const log_posteriors_ref& log_posteriors);

/// Checks that every emission of `automaton` is a column of posteriors with
/// `num_classes` columns (an `invalid_input` error names the segment, the edge
/// and the label).
caf::error check_emissions(std::string_view segment, const fsa& automaton,
                           Eigen::Index num_classes);

/// Both checks every algorithm over a segment makes before it starts:
/// `check_log_posteriors`, then `check_emissions` against their width.
caf::error check_segment_inputs(std::string_view segment, const fsa& automaton,
                                const log_posteriors_ref& log_posteriors);

/// Checks that an output buffer of `segment` has the posteriors' shape.
caf::error check_output_shape(std::string_view segment, const log_posteriors_ref& log_posteriors,
                              Eigen::Index rows, Eigen::Index cols);

} // namespace sprintrt::criterion
