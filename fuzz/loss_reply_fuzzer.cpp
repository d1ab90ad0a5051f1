// libFuzzer target for the replies to a loss request as the parent reads
// them: what RASR's NN python layer path (python/child/sprintrt_control_layer.py)
// and sprintrt_control send for a segment: the loss and its error signal,
// loss inf and zeros for a segment RASR skipped, an exception naming the
// segment, "unknown segment '<name>'" for one RASR's corpus lacks.
//
// The input says what was asked, then what came back:
//
//   byte 0        frames - 1 of the request's posteriors (T = 1 to 256)
//   byte 1        dim - 1 (D = 1 to 256)
//   byte 2        bit 0: raw framing (else length-prefixed); bit 1: the
//                 caller stopped waiting (the job's output gate is closed);
//                 bit 2: the job is the second segment of a time-major batch
//                 of two (its rows are strided)
//   byte 3        N, then N bytes: the segment's name
//   the rest      the bytes on the child's pipe: its replies, framed
//
// (fuzz/seeds/loss_reply_seeds.py writes inputs of this layout.) Each reply
// is read as a Sprint worker reads the reply to its request, with the size
// limit the request sets: `command_entry<get_loss_command>::decode` (no
// shared region), which classifies the child's exceptions
// (`protocol::classify_segment_error`). Besides memory errors, a check fails
// (fuzz_check.hpp) on a decoding that disagrees with the reply: an accepted reply whose error
// signal is not what was sent, a NaN or -inf loss accepted, a refused reply
// that wrote into the batch, an exception that names the segment as unknown
// but is not `unknown_segment` (or the other way round), an error of any
// other code.
//
// Build: configure with clang and -DSPRINTRT_FUZZ=ON (see fuzz/README.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/worker/commands.hpp"
#include "fuzz/fuzz_check.hpp"
#include "fuzz/fuzz_input.hpp"
#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace sprintrt::protocol;
using fuzz::require;

namespace {

/// What the batch's error signal holds until a reply is written into it.
constexpr float unwritten = 1234.5f;

/// How many requests a worker writes ahead of the child's replies: each
/// declares the size limit of its reply.
constexpr int requests_ahead = 4;

/// A loss job of `frames` x `dim` for `segment`: alone, or the second of a
/// time-major batch of two (`strided`), with a closed output gate if
/// `gate_closed`.
segment_job make_job(std::string segment, size_t frames, size_t dim, bool strided,
                     bool gate_closed) {
  const size_t segments = strided ? 2 : 1;
  const size_t first = strided ? dim : 0;
  auto in = make_storage(frames * segments * dim, -1.0f);
  auto out = make_storage(frames * segments * dim, unwritten);
  segment_job job{std::move(segment),
                  {in, first, frames, dim, segments * dim},
                  {out, first, frames, dim, segments * dim},
                  std::make_shared<output_gate>()};
  if (gate_closed)
    job.gate->close();
  return job;
}

/// Whether nothing was written into the job's error signal.
bool unwritten_output(const segment_job& job) {
  const auto& out = job.error_signal;
  for (size_t t = 0; t < out.rows; ++t)
    for (size_t d = 0; d < out.cols; ++d)
      if (out.row(t)[d] != unwritten)
        return false;
  return true;
}

/// Whether nothing was written into the batch around the job's error
/// signal (the other segment's rows of a time-major batch).
bool neighbours_unwritten(const segment_job& job) {
  const auto& out = job.error_signal;
  for (size_t i = 0; i < out.storage->size(); ++i) {
    const bool in_slice = i >= out.offset && (i - out.offset) % out.row_stride < out.cols &&
                          (i - out.offset) / out.row_stride < out.rows;
    if (!in_slice && out.storage->data()[i] != unwritten)
      return false;
  }
  return true;
}

/// Whether the job's error signal holds `sent` ([T, D] float32), bit for bit.
bool holds(const segment_job& job, const ndarray& sent) {
  const auto& out = job.error_signal;
  std::vector<float> expected(out.rows * out.cols);
  if (!copy_rows(sent, expected.data(), out.cols))
    return false;
  for (size_t t = 0; t < out.rows; ++t)
    if (std::memcmp(out.row(t), expected.data() + t * out.cols, out.cols * sizeof(float)) != 0)
      return false;
  return true;
}

/// Returns the message of an ("exception", message, ...) reply (a str, or
/// bytes from an older child), if `reply` is one.
std::optional<std::string> exception_text(const value& reply) {
  if (!reply.is(value::kind::tuple) || reply.as_items().size() < 2)
    return std::nullopt;
  const auto& xs = reply.as_items();
  if (!xs[0].is(value::kind::str) || xs[0].as_str() != "exception")
    return std::nullopt;
  if (xs[1].is(value::kind::str))
    return xs[1].as_str();
  if (xs[1].is(value::kind::bytes))
    return xs[1].as_bytes().to_string();
  return std::nullopt;
}

/// Reads `reply` as the answer to `job` and checks the outcome against
/// what the reply says.
void read_reply(const value& reply, const segment_job& job) {
  const auto& out = job.error_signal;
  for (size_t t = 0; t < out.rows; ++t)
    std::fill_n(out.row(t), out.cols, unwritten);
  auto loss = command_entry<get_loss_command>::decode(reply, job, array_sink{});
  require(neighbours_unwritten(job), "a reply wrote outside its segment's rows");
  // What the reply says, before any classification or gate.
  auto said = decode_loss_reply(reply, out.rows, out.cols);
  if (loss) {
    require(said && !job.gate->closed(), "accepted what is no valid answer, or past a closed gate");
    require(!std::isnan(*loss) && *loss != -std::numeric_limits<double>::infinity(),
            "a failed segment's loss reached the caller");
    require(holds(job, said->error_signal), "the batch does not hold the error signal sent");
    return;
  }
  require(unwritten_output(job), "a refused reply wrote into the batch");
  const auto& err = loss.error();
  (void)render(err); // as the worker's log and the caller's error show it
  if (said) {
    require(err == errc::cancelled && job.gate->closed(),
            "a valid answer refused for another reason than a closed gate");
    return;
  }
  require(err == errc::child_exception || err == errc::unknown_segment ||
              err == errc::invalid_message,
          "an error that is neither a failed segment nor a broken child");
  const auto marker = unknown_segment_text(job.segment);
  const auto text = exception_text(reply);
  const bool names_unknown = text && text->compare(0, marker.size(), marker) == 0;
  require(names_unknown == (err == errc::unknown_segment),
          "an unknown segment's exception misread, or another read as one");
  const auto again = classify_segment_error(err, job.segment);
  require(again == err && error_message(again) == error_message(err),
          "classifying an error again changed it");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzz_input in{data, size};
  const size_t frames = 1 + size_t{in.byte()};
  const size_t dim = 1 + size_t{in.byte()};
  const uint8_t flags = in.byte();
  auto job = make_job(in.text(255), frames, dim, (flags & 4) != 0, (flags & 2) != 0);
  wire_format format;
  format.framing = (flags & 1) != 0 ? framing::raw : framing::length_prefixed;
  frame_decoder decoder{format.framing, format.max_message_size};
  for (int i = 0; i < requests_ahead; ++i)
    decoder.expect(command_entry<get_loss_command>::max_reply_size(format, job));
  // A stream that breaks the framing ends the child; what came before counts.
  (void)decoder.feed(in.rest());
  while (auto message = decoder.next()) {
    auto reply = read_pickle(std::make_shared<const byte_buffer>(std::move(*message)));
    if (reply)
      read_reply(*reply, job);
  }
  return 0;
}
