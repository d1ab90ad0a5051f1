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

/// Renders the first `max_bytes` of `bytes` as a Python bytes literal, with
/// every byte outside printable ASCII escaped (`b'\x80\x02ok'...`), for
/// error messages that quote what a peer sent.
std::string excerpt(byte_span bytes, size_t max_bytes = 48);

} // namespace sprintrt::protocol
