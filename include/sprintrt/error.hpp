#pragma once

/// @file
/// The error values of sprintrt. Every fallible function returns a `caf::error`
/// or a `caf::expected<T>`; the errors it creates itself belong to the category
/// `sprintrt` with one of the codes of `errc` and carry one readable message
/// string as their context ("pickle: unknown opcode 0x99 at offset 12").

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/expected.hpp>

namespace sprintrt {

/// The kinds of failure sprintrt reports. The code says what class of thing went
/// wrong (callers branch on it); the message says exactly what and where.
enum class errc : uint8_t {
  /// Malformed bytes on the wire: bad opcode, forbidden global, bad memo index.
  protocol_error = 1,
  /// A complete message was expected, but the bytes end before it does.
  truncated,
  /// A length or count exceeds the configured maximum message size.
  message_too_large,
  /// A well-formed pickle that is not the expected message (wrong arity, type,
  /// shape or value).
  invalid_message,
  /// Bad user input: shapes, lengths, tags, NaN in posteriors, corpus lines.
  invalid_input,
  /// Bad options: unknown keys, wrong types, impossible values.
  invalid_options,
  /// A segment name that the corpus does not contain.
  unknown_segment,
  /// A failing system call or file operation.
  io_error,
  /// The Sprint child could not be started.
  spawn_failed,
  /// The Sprint child answered a command with an `exception` reply.
  child_exception,
  /// The Sprint child died, closed its pipe or broke the protocol.
  child_failed,
  /// An operation did not complete within its deadline.
  timeout,
  /// A request was cancelled because its owner stopped.
  cancelled,
  /// A request that the receiver's state does not allow: an epoch started
  /// twice, a training range that moves backwards.
  invalid_request,
  /// A worker that cannot take requests now (a remote pool that is
  /// disconnected or refused the connection): the request was not computed,
  /// and a pool sends it to another worker.
  worker_unavailable,
};

/// The category atom of all errors created from `errc`.
constexpr caf::atom_value error_category = caf::atom("sprintrt");

/// Returns the name of `code`, e.g. "protocol_error".
const char* to_string(errc code) noexcept;

/// Creates an error of category `sprintrt` without a message. Also makes
/// `err == errc::truncated` work for any `caf::error err`.
caf::error make_error(errc code);

/// Creates an error of category `sprintrt` with a readable message.
caf::error make_error(errc code, std::string message);

/// Returns the message stored in an error created by `make_error(code, message)`,
/// or an empty string.
std::string error_message(const caf::error& err);

/// Returns `err` with `context` put in front of its message ("worker 2:
/// segment 'x': <message>"), keeping its code. Errors of other categories are
/// returned unchanged.
caf::error with_context(const std::string& context, const caf::error& err);

/// Renders any error for humans: "protocol_error: <message>" for sprintrt
/// errors, CAF's own rendering otherwise, "none" for no error.
std::string render(const caf::error& err);

} // namespace sprintrt
