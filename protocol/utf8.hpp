#pragma once

/// @file
/// The two UTF-8 operations the wire needs: pickled `str` objects are UTF-8,
/// and Python 3 writes `bytes` at protocol 2 as a latin-1 `str` passed to
/// `_codecs.encode`, which must be turned back into bytes.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sprintrt::protocol {

/// Returns whether `text` is well-formed UTF-8 as Python's pickle writes it
/// (code points up to U+10FFFF, no overlong forms; encoded surrogates are
/// accepted because pickle uses the "surrogatepass" error handler).
bool is_valid_utf8(std::string_view text) noexcept;

/// Returns `text` as a Python `str` can hold it: unchanged if it is valid
/// UTF-8, else with every byte from 0x80 up replaced by '?' (what an
/// exception reply carries, whatever its message was made of).
std::string python_decodable(std::string text);

/// Decodes UTF-8 `text` and encodes it as latin-1, one byte per code point.
/// Returns nothing if `text` is not valid UTF-8 or has a code point above 0xFF.
std::optional<std::vector<std::byte>> utf8_to_latin1(std::string_view text);

/// Returns `bytes` as text that is safe to log or put in an error message:
/// well-formed UTF-8 and tabs and newlines stay as they are; every other
/// control character (C0, DEL, C1 such as CSI) and every byte that is not
/// part of well-formed UTF-8 becomes `\xNN` (a backslash becomes `\\`),
/// so that a child's output cannot move the cursor, clear the screen or
/// forge a log line.
std::string escape_for_log(std::string_view bytes);

} // namespace sprintrt::protocol
