#pragma once

/// @file
/// The whitelist of Python callables a pickle may name (docs/protocol.md
/// section 3), and what calling each builds. This is the only way a message
/// gets past plain values, so it is kept small and in one place: RETURNN's
/// array constructor, NumPy scalars and dtypes, and the two forms Python 3
/// uses for bytes at protocol 2. Nothing else can be named or called.

#include <optional>
#include <string_view>

#include "protocol/pickle_value.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// The module RETURNN's array constructor lives in today.
constexpr std::string_view default_array_module = "returnn.util.task_system";

/// The module of the array constructor in RETURNN checkouts before 2020.
constexpr std::string_view legacy_array_module = "TaskSystem";

/// Resolves a GLOBAL's module and name; nothing for every pair not on the
/// whitelist.
std::optional<callable> resolve_global(std::string_view module, std::string_view name);

/// Calls `fn` with `args` (REDUCE): checks the arguments and builds the
/// value. Arrays share the bytes object's data (no copy). Errors are
/// `protocol_error` saying what was wrong; the reader adds opcode and offset.
caf::expected<value> call_global(callable fn, const value::items& args);

/// Applies a BUILD state to a `numpy.dtype` object: only little-endian (or
/// byte-order-free) dtypes are accepted.
caf::error build_numpy_dtype(const value& state);

} // namespace sprintrt::protocol
