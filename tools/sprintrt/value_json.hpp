#pragma once

/// @file
/// The typed JSON form of values, as used by the golden vectors
/// (`tests/data/protocol-vectors/vectors.json`) and printed by
/// `sprintrt pickle-dump`:
///
///   {"none": null}  {"bool": true}  {"int": 3}  {"float": 12.375}
///   {"float": "inf"} ("-inf", "nan" for the other non-finite values)
///   {"str": "ok"}  {"bytes_hex": "636f"}  {"tuple": [...]}  {"list": [...]}
///   {"dict": [[key, value], ...]}
///   {"ndarray": {"dtype": "float32", "shape": [3, 4], "data": [...]}}
///   {"numpy_scalar": {"dtype": "float32", "value": 2.5}}
///
/// Array data is flat, in C order; floats are printed as the shortest decimal
/// that reads back to the same double (float32 values are widened exactly).

#include <nlohmann/json_fwd.hpp>

#include "protocol/pickle_value.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::cli {

/// A number as JSON: itself if finite, else the string "inf", "-inf" or
/// "nan" (JSON has no non-finite numbers).
nlohmann::json float_to_json(double x);

/// Converts a value to its typed JSON form.
nlohmann::json to_json(const protocol::value& x);

/// Builds a value (owning all its bytes) from its typed JSON form. Fails with
/// `invalid_input` naming the offending part. `{"ndarray": {..., "arange":
/// true}}` (the golden vectors' shorthand for data 0, 1, 2, ...) is accepted.
caf::expected<protocol::value> from_json(const nlohmann::json& j);

} // namespace sprintrt::cli
