#pragma once

/// @file
/// Decoding one pickle (protocols 2 to 5) into a `value`.
///
/// The reader is a safe subset of Python's unpickler: it executes the opcodes
/// of docs/protocol.md section 3 and calls only the whitelisted globals of
/// `callable`, so a message can build values and nothing else. It trusts no
/// length: every count is checked against what is left of the message before
/// anything is allocated, so memory use is linear in the message size.

#include <memory>

#include "common/span.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/pickle_value.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::protocol {

/// Decodes `message`, which must hold exactly one pickle ending in STOP.
/// Byte strings and array data are copied out of `message`: the result is
/// independent of it.
///
/// Errors: `truncated` when the message ends early, `protocol_error` for
/// anything malformed or forbidden. Every error message names the opcode and
/// its byte offset in `message`.
caf::expected<value> read_pickle(byte_span message);

/// Decodes like `read_pickle(byte_span)`, without copying: byte strings and
/// array data in the result point into `*message` and share its ownership,
/// so the buffer lives as long as any of them. For large messages on the hot
/// path (a 40 MB error signal is never copied before it reaches its batch).
caf::expected<value> read_pickle(std::shared_ptr<const byte_buffer> message);

} // namespace sprintrt::protocol
