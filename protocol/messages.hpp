#pragma once

/// @file
/// The typed commands and replies of docs/protocol.md section 4.
///
/// Parent to child, and the child's reply:
///
///   ("init", "SprintSubprocessInstance", 1)          -> ("ok", child_name, 1)
///   ("get_loss_and_error_signal", seg, T, lp[T, D])  -> ("ok", loss, error_signal[T, D])
///   ("export_allophone_state_fsa_by_segment_name", seg)
///                              -> ("ok", num_states, num_edges, edges[3*E], weights[E])
///   ("export_allophone_state_fsa_by_orthography", orthography)
///                              -> the same as by segment name
///   ("exit",)                                        -> no reply, the child exits
///
/// With the shared region (docs/protocol.md section 7) the posteriors and the
/// error signal are references (`shared_array.hpp`) instead of arrays, and
/// the `init` reply has "sprintrt_shm" as a fourth item.
///
/// and `("exception", message)` replaces any reply when the child's handler
/// failed. Encoders write one framed message into a `byte_buffer` (array data
/// copied once, straight from the caller's memory); decoders validate a
/// decoded pickle's arity, types and shapes and return its arrays as they
/// are in the decoded value (see `ndarray_access.hpp` to get the numbers out).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "common/span.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/framing.hpp"
#include "protocol/pickle_value.hpp"
#include "protocol/pickle_writer.hpp"
#include "protocol/shared_array.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/fsa_query.hpp"

namespace sprintrt::protocol {

/// The protocol version both sides must speak (`SprintSubprocessInstance.Version`).
constexpr int64_t protocol_version = 1;

/// The name the parent introduces itself with in `init`.
constexpr std::string_view parent_name = "SprintSubprocessInstance";

/// Command names.
constexpr std::string_view init_command_name = "init";
constexpr std::string_view loss_command_name = "get_loss_and_error_signal";
constexpr std::string_view fsa_command_name = "export_allophone_state_fsa_by_segment_name";
constexpr std::string_view fsa_by_orthography_command_name =
    "export_allophone_state_fsa_by_orthography";
constexpr std::string_view exit_command_name = "exit";

/// Returns the FSA export command for `source`: `fsa_command_name` or
/// `fsa_by_orthography_command_name`.
constexpr std::string_view fsa_command_name_of(fsa_source source) noexcept {
  return source == fsa_source::orthography ? fsa_by_orthography_command_name : fsa_command_name;
}

/// How messages are put on the wire: framing, the module of the array
/// constructor, and the size limit.
struct wire_format {
  /// Length prefix (current RETURNN) or back-to-back pickles (legacy).
  protocol::framing framing = framing::length_prefixed;
  /// `returnn.util.task_system`, or `TaskSystem` for old RETURNN checkouts.
  std::string array_module{default_array_module};
  /// Larger messages are a protocol error.
  size_t max_message_size = default_max_message_size;
};

// -- commands (parent to child) -------------------------------------------------

/// ("init", name, version)
struct init_command {
  std::string client_name;
  int64_t version = 0;
};

/// ("get_loss_and_error_signal", segment_name, seg_len, log_posteriors[T, D])
struct loss_command {
  std::string segment_name;
  /// T: equals the posteriors' first dimension and is positive.
  size_t frames = 0;
  /// float32 [T, D]; empty when they are in the shared region.
  ndarray log_posteriors;
  /// Where the posteriors are instead, when the parent sent them through
  /// the child's shared region (docs/protocol.md section 7).
  std::optional<shared_array> shared_posteriors;
};

/// ("export_allophone_state_fsa_by_segment_name", segment_name) or
/// ("export_allophone_state_fsa_by_orthography", orthography), by `source`.
struct fsa_command {
  /// The segment name or the orthography: a non-empty str.
  std::string text;
  fsa_source source = fsa_source::segment_name;
};

/// ("exit",)
struct exit_command {};

/// Any command.
using command = std::variant<init_command, loss_command, fsa_command, exit_command>;

/// Validates a decoded message as a command. Fails with `invalid_message`
/// naming what was wrong (an unknown command name included).
caf::expected<command> decode_command(const value& message);

/// Appends ("init", "SprintSubprocessInstance", 1).
caf::error encode_init_command(byte_buffer& out, const wire_format& fmt);

/// Appends a loss command for `frames` x `dim` float32 log-posteriors whose
/// row t starts at `log_posteriors + t * row_stride` (row_stride == dim for
/// contiguous data; B * D for one segment of a time-major batch).
caf::error encode_loss_command(byte_buffer& out, const wire_format& fmt,
                               std::string_view segment_name, size_t frames, size_t dim,
                               const float* log_posteriors, size_t row_stride);

/// Appends a loss command whose posteriors the parent wrote into the
/// child's shared region at `posteriors` (docs/protocol.md section 7).
caf::error encode_loss_command(byte_buffer& out, const wire_format& fmt,
                               std::string_view segment_name, const shared_array& posteriors);

/// Appends an FSA export command of `source` for `text` (a segment name or
/// an orthography). Errors: `invalid_input` for text that is not UTF-8.
caf::error encode_fsa_command(byte_buffer& out, const wire_format& fmt, std::string_view text,
                              fsa_source source = fsa_source::segment_name);

/// Appends ("exit",).
caf::error encode_exit_command(byte_buffer& out, const wire_format& fmt);

// -- replies (child to parent) --------------------------------------------------

/// ("ok", child_name, version), or ("ok", child_name, version, "sprintrt_shm")
/// from a child that accepts the shared region it was offered.
struct init_reply {
  std::string child_name;
  int64_t version = 0;
  /// The child named `shared_memory_tag` as a fourth item.
  bool shared_memory = false;
};

/// ("ok", loss, error_signal[T, D])
struct loss_reply {
  /// +inf for a segment the child skipped.
  double loss = 0;
  /// float32 [T, D], the shape of the posteriors sent; empty when it is in
  /// the shared region.
  ndarray error_signal;
  /// Where the error signal is instead: a reply to a command whose
  /// posteriors came through the shared region has it there too.
  std::optional<shared_array> shared_error_signal;
};

/// ("ok", num_states, num_edges, edges[3*E], weights[E])
struct fsa_reply {
  size_t num_states = 0;
  size_t num_edges = 0;
  /// uint32: all `from` states, then all `to` states, then all emission indices.
  ndarray edges;
  /// float32: each edge's cost in -log space.
  ndarray weights;
};

/// What every reply limit allows beyond its array data: the rest of the
/// pickle, or an ("exception", message) reply carrying a long traceback.
constexpr size_t reply_margin = size_t{1} << 20;

/// The largest reply to `init` accepted: ("ok", name, version) is tiny.
constexpr size_t max_init_reply_size = reply_margin;

/// The largest reply to a loss command for `frames` x `dim` posteriors
/// accepted: the float32 error signal twice over (a protocol-2 pickle
/// writes bytes as latin-1 text, up to 2 bytes of UTF-8 each) plus
/// `reply_margin`. A length prefix beyond it is a protocol error at once.
size_t max_loss_reply_size(size_t frames, size_t dim) noexcept;

/// Decodes the reply to `init`. An ("exception", msg) reply gives a
/// `child_exception` error carrying msg; anything else malformed gives
/// `invalid_message`, a fourth item other than "sprintrt_shm" included.
/// (The version is returned, not checked; whether the region was offered
/// is the caller's check.)
caf::expected<init_reply> decode_init_reply(const value& message);

/// Checks that the child speaks `protocol_version`; an `invalid_message`
/// error naming both versions otherwise.
caf::error check_protocol_version(const init_reply& reply);

/// Decodes the reply to a loss command for `frames` x `dim` posteriors,
/// sent through the shared region if `shared` (then the error signal must
/// be a reference of that shape too, else an array). A NaN or -inf loss is
/// a `child_exception` (the segment's computation failed; the child is
/// fine), a wrong form, shape, type or arity `invalid_message` (the child is
/// broken).
caf::expected<loss_reply> decode_loss_reply(const value& message, size_t frames, size_t dim,
                                            bool shared = false);

/// Decodes the reply to an FSA export of `source` (whose command its errors
/// name); checks that every edge's states are below num_states.
caf::expected<fsa_reply> decode_fsa_reply(const value& message,
                                          fsa_source source = fsa_source::segment_name);

/// Appends ("ok", child_name, version), with "sprintrt_shm" as a fourth
/// item if `shared_memory` (the child accepts the region it was offered).
caf::error encode_init_reply(byte_buffer& out, const wire_format& fmt, std::string_view child_name,
                             int64_t version = protocol_version, bool shared_memory = false);

/// How a child writes the loss: a Python float (RASR's SprintControl) or a
/// `numpy.float32` (what some children return).
enum class loss_encoding : uint8_t { python_float, numpy_float32 };

/// Returns `loss` as a parent reads it from a reply that encodes it as
/// `encoding`: rounded to float32 for `numpy_float32`.
double loss_as_sent(double loss, loss_encoding encoding) noexcept;

/// Checks a loss as a parent reads it from a reply: +inf marks a skipped
/// segment; NaN and -inf are no loss at all, a `child_exception` (the
/// child's computation failed for this segment, as if it had raised).
/// `decode_loss_reply` checks with it, and so does the in-process
/// simulation, which sends no reply.
caf::expected<double> check_reply_loss(double loss);

/// Appends ("ok", loss, error_signal[frames, dim]) from contiguous data.
caf::error encode_loss_reply(byte_buffer& out, const wire_format& fmt, double loss, size_t frames,
                             size_t dim, const float* error_signal,
                             loss_encoding encoding = loss_encoding::python_float);

/// Appends ("ok", loss, reference): the error signal was written into the
/// shared region at `error_signal`.
caf::error encode_loss_reply(byte_buffer& out, const wire_format& fmt, double loss,
                             const shared_array& error_signal,
                             loss_encoding encoding = loss_encoding::python_float);

/// Appends ("ok", num_states, E, edges[3*E], weights[E]); `edges` holds the
/// 3*E values laid out as all from, all to, all emission.
caf::error encode_fsa_reply(byte_buffer& out, const wire_format& fmt, size_t num_states,
                            span<const uint32_t> edges, span<const float> weights);

/// Appends ("exception", message).
caf::error encode_exception_reply(byte_buffer& out, const wire_format& fmt,
                                  std::string_view message);

/// The words an exception reply begins with when the child does not know
/// the segment it was asked for: `unknown segment '<name>'` (section 4 of
/// docs/protocol.md), as `sprint-sim` and `sprintrt_control` write it.
std::string unknown_segment_text(std::string_view segment);

/// Classifies the error of a reply to a request for segment `segment`: a
/// `child_exception` whose message begins with `unknown_segment_text(segment)`
/// becomes `unknown_segment` (same message); every other error is returned
/// unchanged. The protocol carries no error codes, only text, so this is
/// the one place where a child's words become a code; a child that names
/// another segment, or words it otherwise, stays a `child_exception`.
caf::error classify_segment_error(const caf::error& err, std::string_view segment);

} // namespace sprintrt::protocol
