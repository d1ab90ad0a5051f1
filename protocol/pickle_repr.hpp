#pragma once

/// @file
/// Python-like rendering of values for error messages:
/// `('ok', 12.375, ndarray(float32, [3, 4]))`.

#include <cstddef>
#include <string>

#include "protocol/pickle_value.hpp"

namespace sprintrt::protocol {

/// Renders a value like Python's repr, abbreviating arrays and long contents,
/// for error messages: `('ok', 12.375, ndarray(float32, [3, 4]))`.
std::string repr(const value& x, size_t max_length = 200);

} // namespace sprintrt::protocol
