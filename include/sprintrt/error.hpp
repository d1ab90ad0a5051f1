#pragma once

/// @file
/// The error values of sprintrt. Every fallible function returns a `caf::error`
/// or a `caf::expected<T>`; the errors it creates itself belong to the category
/// `sprintrt` with one of the codes of `errc` and carry a readable message
/// as their context ("pickle: unknown opcode 0x99 at offset 12"). A failure
/// that a worker met keeps the worker, the Sprint child's pid, its end and
/// its output's tail as fields (`failure`): a pool groups failures by them,
/// and `render` joins them into text only where a person reads it.

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

/// How a Sprint child ended, as a failure records it.
struct child_end {
  /// Its pid; -1 if it was never started.
  int32_t pid = -1;
  /// How it ended ("exited with status 3", "was killed by signal 9
  /// (Killed)", "was never started"); empty when the failure concerns no
  /// child.
  std::string ending;
  /// The last lines of its output, or empty.
  std::string output_tail;
};

/// What an error of category `sprintrt` says, as fields. Its text joins
/// the non-empty ones with ": " in this order, the child last: "pool 0:
/// pool 0 worker 3: get_loss_and_error_signal of segment 'a': no reply
/// within 300 ms (replyTimeout); Sprint child pid 42 was killed by signal
/// 9 (Killed); its output ended with:\n...".
struct failure {
  /// Context put in front after a worker met it.
  std::string outer;
  /// The label of the worker that met it ("pool 0 worker 3"), or empty.
  std::string worker;
  /// The label of the pool whose worker that is ("pool 0"), once that pool
  /// saw the failure (`in_pool`): a pool tells a cause that several of its
  /// workers met as its own, with this label in the worker's place. Not
  /// part of the text.
  std::string pool;
  /// What the worker was doing ("get_loss_and_error_signal of segment
  /// 'a'"), and any context put in front before a worker met it.
  std::string inner;
  /// Why it failed.
  std::string cause;
  /// The Sprint child whose end it was, if `child.ending` is not empty.
  child_end child;
};

/// Returns the name of `code`, e.g. "protocol_error".
const char* to_string(errc code) noexcept;

/// Creates an error of category `sprintrt` without a message. Also makes
/// `err == errc::truncated` work for any `caf::error err`.
caf::error make_error(errc code);

/// Creates an error of category `sprintrt` with a readable message.
caf::error make_error(errc code, std::string message);

/// Creates an error of category `sprintrt` that says `what` as fields.
caf::error make_error(errc code, failure what);

/// Returns the fields of an error of category `sprintrt` (a plain message
/// is the `cause`); empty fields for any other error.
failure failure_of(const caf::error& err);

/// Joins the fields of `what` into its text (see `failure`).
std::string to_string(const failure& what);

/// Returns whether `a` and `b` have the same cause: equal but for the
/// worker that met them and what differs from child to child (the pid and
/// the output's tail), as when every worker of a pool meets a missing
/// program alike.
bool same_cause(const failure& a, const failure& b) noexcept;

/// Returns `err` as seen by the pool labelled `pool`: a failure that a
/// worker met and no pool saw yet gets `pool` as its worker's pool. Errors
/// of other categories are returned unchanged.
caf::error in_pool(const std::string& pool, const caf::error& err);

/// Returns the text of an error of category `sprintrt` (its fields joined,
/// see `failure`), the message of any other error whose context is one
/// string, or an empty string.
std::string error_message(const caf::error& err);

/// Returns `err` with `context` put in front of its message ("worker 2:
/// segment 'x': <message>"), keeping its code and fields (a worker stays
/// the one that met it: the context goes in front of it). Errors of other
/// categories are returned unchanged.
caf::error with_context(const std::string& context, const caf::error& err);

/// Returns `err` as met by the worker labelled `worker` while it was doing
/// `doing` (may be empty): "pool 0 worker 3: <doing>: <message>", with the
/// worker as a field; a worker that met it before (at the far end of a
/// remote pool) becomes part of the context; with an empty `worker`, no
/// worker is named as a field. Errors of other categories are returned
/// unchanged.
caf::error with_worker(const std::string& worker, const std::string& doing, const caf::error& err);

/// Renders any error for humans: "protocol_error: <message>" for sprintrt
/// errors, CAF's own rendering otherwise, "none" for no error.
std::string render(const caf::error& err);

} // namespace sprintrt
