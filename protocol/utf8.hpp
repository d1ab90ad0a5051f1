#pragma once

/// @file
/// The two UTF-8 operations the wire needs: pickled `str` objects are UTF-8,
/// and Python 3 writes `bytes` at protocol 2 as a latin-1 `str` passed to
/// `_codecs.encode`, which must be turned back into bytes.

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace sprintrt::protocol {

/// Returns whether `text` is well-formed UTF-8 as Python's pickle writes it
/// (code points up to U+10FFFF, no overlong forms; encoded surrogates are
/// accepted because pickle uses the "surrogatepass" error handler).
bool is_valid_utf8(std::string_view text) noexcept;

/// Decodes UTF-8 `text` and encodes it as latin-1, one byte per code point.
/// Returns nothing if `text` is not valid UTF-8 or has a code point above 0xFF.
std::optional<std::vector<std::byte>> utf8_to_latin1(std::string_view text);

} // namespace sprintrt::protocol
