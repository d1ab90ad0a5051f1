#pragma once

/// @file
/// The Sprint side of the protocol (docs/protocol.md section 4) over a criterion:
/// takes one decoded message, computes the answer and appends the framed
/// reply. Pure: no file descriptors, no processes; `sprint-sim` puts it on a
/// pair of pipes, tests call it directly.
///
/// Replies:
/// - `init`: ("ok", child name, 1), with "sprintrt_shm" as a fourth item
///   when the service has a shared region (docs/protocol.md section 7). A command version other
///   than 1 is answered all the same, with a warning in the log: the version check is the parent's
///   (it compares the version in our reply), and an answer gives it a clear error where silence
///   would give it a timeout.
/// - `get_loss_and_error_signal`: ("ok", loss, error_signal[T, D]) from the
///   criterion's full-sum (loss +inf and zeros for a skipped segment), or
///   loss 0 and zeros for any segment with `criterion_kind::zero`. A request
///   whose posteriors are in the shared region is read there in place and
///   answered with the error signal written over them and a reference.
/// - `export_allophone_state_fsa_by_segment_name`: ("ok", num_states,
///   num_edges, edges[3*E], weights[E]) of the criterion's FSA.
/// - `export_allophone_state_fsa_by_orthography`: the same for the label
///   sequence the orthography writes ("3 17 5", as in the corpus file); one
///   that is no label sequence is answered with an exception naming it.
/// - `exit`: no reply; the caller exits.
/// - An unknown segment: ("exception", "unknown segment '<name>': not in
///   corpus ..."), the words the parent reads as `unknown_segment`
///   (`protocol::classify_segment_error`).
/// - Anything else that fails (NaN or +inf posteriors, a label
///   beyond the posteriors' width, an unknown command, a malformed message):
///   ("exception", message), and the service keeps serving, like RETURNN's
///   SprintControl, which answers a failing handler with its exception.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/shared_region.hpp"
#include "protocol/byte_buffer.hpp"
#include "protocol/messages.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/fsa_query.hpp"
#include "sprintrt/segment_fsa.hpp"
#include "sprintrt/segment_job.hpp"

namespace sprintrt::sim {

/// How the service writes its replies.
struct service_options {
  /// Framing, array constructor module and size limit of the replies.
  protocol::wire_format wire;
  /// A Python float (as RASR's SprintControl) or a numpy.float32.
  protocol::loss_encoding loss_encoding = protocol::loss_encoding::python_float;
  /// The child name in the `init` reply.
  std::string child_name = "sprint-sim";
  /// The version in the `init` reply (a fault injection answers 2).
  int64_t init_reply_version = protocol::protocol_version;
  /// Accept a shared region in the `init` reply even without one (a fault
  /// injection: a child that claims what it was not offered).
  bool claim_shared_memory = false;
};

/// What the caller does after the service handled a message.
enum class service_action : uint8_t {
  /// Send what the service appended to the output buffer.
  reply,
  /// Exit with status 0: the parent sent `exit`. Nothing was appended.
  exit,
};

/// Answers protocol commands with a criterion, and the same commands as
/// typed work for in-process simulated workers (`answer`). Keeps its work buffers (the
/// posteriors copy, the error signal) between requests, so that a warmed-up
/// service answers a loss request of a known segment without allocating
/// beyond the reply buffer's growth. Not thread-safe.
class sprint_service {
public:
  /// A service computing with `segments_criterion`, replying per `options`.
  sprint_service(corpus_criterion segments_criterion, service_options options);

  /// Returns the options.
  const service_options& options() const noexcept { return options_; }

  /// Serves loss requests through `region` (the parent's offer, attached;
  /// it must outlive the service) and accepts it in the `init` reply.
  void use_shared_region(shared_region* region) noexcept { region_ = region; }

  /// Returns the shared region, if the service has one.
  shared_region* region() const noexcept { return region_; }

  /// Decodes `message` (a pickle as `protocol::read_pickle` returns it) as a
  /// command and handles it; a malformed command is answered with an
  /// exception reply.
  service_action handle(const protocol::value& message, protocol::byte_buffer& out);

  /// Handles a decoded command, appending its framed reply to `out`.
  service_action handle(const protocol::command& request, protocol::byte_buffer& out);

  /// Computes a loss job as `get_loss_and_error_signal` would, straight from
  /// and into the job's slices, through its output gate if it has one: the
  /// criterion reads and writes row by row in element order, so the row
  /// strides change no bit of the result. Returns the loss as the parent
  /// receives it (rounded to float for `loss_encoding::numpy_float32`).
  /// Errors: `child_exception` with the text of the exception reply the
  /// protocol would carry, `unknown_segment` where the parent would read
  /// that text as such (`protocol::classify_segment_error`); `cancelled` if the gate is closed
  /// (nothing written); `invalid_message` for a loss the parent refuses (NaN, -inf).
  caf::expected<double> answer(const segment_job& job);

  /// Exports an automaton as `export_allophone_state_fsa_by_segment_name`
  /// or `_by_orthography` would. Errors: `child_exception` and
  /// `unknown_segment` (a segment's export only) as above.
  caf::expected<segment_fsa> answer(const fsa_query& query);

  /// Appends ("exception", the message of `err`): how every failure is
  /// answered, also those found before a command could be decoded (a body
  /// that is not a pickle).
  void reply_error(const caf::error& err, protocol::byte_buffer& out);

private:
  // One overload per command of `protocol::command`, which `handle` visits:
  // a command without one does not compile.
  service_action serve(const protocol::init_command& request, protocol::byte_buffer& out);
  service_action serve(const protocol::loss_command& request, protocol::byte_buffer& out);
  service_action serve(const protocol::fsa_command& request, protocol::byte_buffer& out);
  service_action serve(const protocol::exit_command& request, protocol::byte_buffer& out);

  void answer_init(const protocol::init_command& request, protocol::byte_buffer& out);
  void answer_loss(const protocol::loss_command& request, protocol::byte_buffer& out);
  void answer_shared_loss(const protocol::loss_command& request, protocol::byte_buffer& out);
  // Computes the loss of `frames` x `dim` posteriors at `data` into
  // `error_signal_`; replies with the error and returns nothing on failure.
  std::optional<double> compute_loss(const std::string& segment, const float* data, size_t frames,
                                     size_t dim, protocol::byte_buffer& out);
  void answer_fsa(const protocol::fsa_command& request, protocol::byte_buffer& out);
  // Appends ("exception", message).
  void reply_exception(std::string_view message, protocol::byte_buffer& out);
  // Replies with `encoded`'s error if encoding a reply failed.
  void check_encoded(caf::error encoded, protocol::byte_buffer& out);

  corpus_criterion criterion_;
  service_options options_;
  /// The parent's shared region, if offered and attached.
  shared_region* region_ = nullptr;
  /// Posteriors whose data in the message is not aligned for float, copied.
  std::vector<float> posteriors_;
  /// The error signal of the current request.
  std::vector<float> error_signal_;
};

/// Describes a command for a log line: its name, the segment and the
/// posteriors' shape ("get_loss_and_error_signal 'a/1' [12 x 40]").
std::string describe(const protocol::command& request);

} // namespace sprintrt::sim
