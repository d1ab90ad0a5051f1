// libFuzzer target for references into a child's shared region
// (docs/protocol.md section 7, protocol/shared_array.hpp): both sides check a
// reference before they touch a byte, and a reference that passes must lie
// inside the region.
//
// The input begins with a case (shared_array_case.hpp): a loss request of a
// known shape, in a slot of a real region (a sealed memory file) among the
// slots of other requests. The rest of the input is one pickle, read twice:
//   - as a command, by sprint-sim's service (sim/sprint_service) on a
//     mapping of its own of the same file, as a child reads the parent's
//     reference; then its reply goes back to the parent;
//   - as the reply to the request, by the parent's decoding
//     (`command_entry<get_loss_command>::decode` with the request's slot).
// Whatever the checks let pass is checked here once more against the region's
// known size, the slot and the bytes: a reference that passed but would not
// be inside fails a check (fuzz_check.hpp: it traps), as do a parent and a
// child that disagree about the child's own reply.
//
// Build: configure with clang and -DSPRINTRT_FUZZ=ON (see fuzz/README.md).

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <variant>

#include <spdlog/spdlog.h>

#include "actors/worker/commands.hpp"
#include "actors/worker/shared_slots.hpp"
#include "common/shared_region.hpp"
#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "fuzz/fuzz_check.hpp"
#include "fuzz/fuzz_input.hpp"
#include "fuzz/shared_array_case.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/corpus_criterion.hpp"
#include "sim/sprint_service.hpp"
#include "sprintrt/logging.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace sprintrt::protocol;
using fuzz::require;

namespace {

/// What the posteriors hold: finite, as a child's criterion requires.
constexpr float posterior_value = -1.5f;

/// What the error signal holds until a reply is written into it.
constexpr float unwritten = 1234.5f;

/// Returns the value of `x`, or ends the run: for what the fuzzer needs from
/// the system (a memory file), which no input can make fail.
template <class T>
T must(caf::expected<T> x, const char* what) {
  if (!x) {
    std::fprintf(stderr, "shared_array_fuzzer: %s: %s\n", what, render(x.error()).c_str());
    std::abort();
  }
  return std::move(*x);
}

/// sprint-sim's service as a child runs it, over a criterion that answers
/// every segment with loss 0 and zeros: no corpus look-up and no arithmetic
/// stand between an input and the region's checks.
sim::sprint_service& child_service() {
  static sim::sprint_service service = [] {
    sim::corpus_criterion zero{must(criterion::corpus::from_string("seg\t1 2\n"), "corpus"),
                               std::make_shared<criterion::ctc_topology>(0),
                               sim::criterion_spec{sim::criterion_kind::zero}};
    sim::service_options options;
    options.wire.framing = framing::raw;
    return sim::sprint_service{std::move(zero), options};
  }();
  return service;
}

/// A loss job of `c`'s shape: dense posteriors and error signal, no gate.
segment_job make_job(const fuzz::shared_array_case& c) {
  segment_job job{"seg", matrix_slice::dense(c.frames, c.dim),
                  matrix_slice::dense(c.frames, c.dim)};
  std::fill_n(job.log_posteriors.row(0), c.frames * c.dim, posterior_value);
  return job;
}

/// Whether `reply` is ("ok", ...).
bool is_ok(const value& reply) {
  return reply.is(value::kind::tuple) && !reply.as_items().empty() &&
         reply.as_items()[0].is(value::kind::str) && reply.as_items()[0].as_str() == "ok";
}

/// Returns the file size of the region behind `fd`: all that any mapping of
/// it, the parent's or a child's, can ever reach.
uint64_t file_size(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    std::abort();
  return static_cast<uint64_t>(info.st_size);
}

/// Whether `reference` lies inside `size` bytes, aligned for float.
bool inside(const shared_array& reference, uint64_t size) {
  return reference.offset % alignof(float) == 0 && reference.offset <= size &&
         reference.bytes() <= size - reference.offset;
}

/// Whether the `bytes` at `offset` of the parent's region are all zero.
bool zeros_at(shared_region& region, uint64_t offset, uint64_t bytes) {
  auto place = region.view(offset, bytes, alignof(float));
  if (!place)
    return false;
  for (uint64_t i = 0; i < bytes; ++i)
    if ((*place)[i] != std::byte{0})
      return false;
  return true;
}

/// Serves `message` as a child with `region` mapped, and returns its reply
/// (none for `exit`). A loss command whose reference the child accepted
/// (its reply is "ok") must lie inside the file, and the reply must name the
/// same place, where the child's zeros now are.
std::optional<value> serve(const value& message, shared_region& child_region,
                           shared_region& parent_region) {
  auto& child = child_service();
  child.use_shared_region(&child_region);
  byte_buffer out;
  if (child.handle(message, out) == sim::service_action::exit)
    return std::nullopt;
  auto reply = read_pickle(out.bytes());
  require(static_cast<bool>(reply), "the child wrote a reply that is no pickle");
  auto request = decode_command(message);
  const auto* loss = request ? std::get_if<loss_command>(&*request) : nullptr;
  if (loss && loss->shared_posteriors && is_ok(*reply)) {
    const auto& reference = *loss->shared_posteriors;
    require(inside(reference, file_size(child_region.fd())),
            "the child accepted a reference beyond the region");
    require(reply->as_items().size() == 3, "the child's loss reply has another arity");
    auto answered = read_shared_array(reply->as_items()[2], "the child's reply", reference.rows,
                                      reference.cols);
    require(answered && answered->offset == reference.offset,
            "the child's reply names another place than the command");
    require(zeros_at(parent_region, reference.offset, reference.bytes()),
            "the child's error signal is not where its reply says");
  }
  return std::move(*reply);
}

/// Reads `reply` as the parent reads the reply to `job` sent through
/// `slot`; returns whether it was accepted. An accepted reference must be the
/// slot's, of the job's shape, inside the region, and the job's error signal
/// what the region holds there; a refused reply writes nothing.
bool parent_reads(const value& reply, const segment_job& job, const shared_slot& slot) {
  const auto& out = job.error_signal;
  std::fill_n(out.row(0), out.rows * out.cols, unwritten);
  auto loss = command_entry<get_loss_command>::decode(reply, job, array_sink{slot});
  if (!loss) {
    require(std::all_of(out.row(0), out.row(0) + out.rows * out.cols,
                        [](float x) { return x == unwritten; }),
            "a refused reply wrote into the batch");
    return false;
  }
  auto decoded = decode_loss_reply(reply, out.rows, out.cols, true);
  require(decoded && decoded->shared_error_signal,
          "the parent accepted a reply without a reference of the job's shape");
  const auto& reference = *decoded->shared_error_signal;
  require(reference.offset == slot.offset && reference.rows == out.rows &&
              reference.cols == out.cols && inside(reference, slot.region->size()),
          "the parent accepted a reference other than its slot");
  auto place = slot.region->view(reference.offset, reference.bytes(), alignof(float));
  require(place && std::memcmp(*place, out.row(0), reference.bytes()) == 0,
          "the batch's error signal is not the region's bytes");
  return true;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A child's log lines (an init of another version, a skipped segment)
  // would cost more than the run.
  sprintrt::logger().set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::fuzz_input in{data, size};
  const auto c = fuzz::shared_array_case::read(in);
  auto message = read_pickle(in.rest());
  if (!message)
    return 0; // neither side gets past the reader: protocol_fuzzer's ground

  // The parent's slots, as a worker takes them for the requests it writes.
  shared_slots slots{must(shared_region::create("shared_array_fuzzer"), "memfd")};
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::optional<shared_slot> before;
  if (c.pages_before > 0)
    before = must(slots.acquire(c.pages_before * page), "slot before");
  auto job = make_job(c);
  const auto slot = must(slots.acquire(command_entry<get_loss_command>::shared_bytes(job)), "slot");
  std::optional<shared_region> child_region;
  auto map_child = [&] {
    child_region = must(shared_region::attach(::dup(slots.region()->fd())), "attach");
  };
  if (c.child_mapped_early)
    map_child();
  if (c.pages_after > 0)
    must(slots.acquire(c.pages_after * page), "slot after");
  if (before && c.before_answered)
    slots.release(before->offset);
  if (!c.child_mapped_early)
    map_child();
  // Sending the request puts its posteriors into the slot (the command's
  // bytes are the seeds' business).
  byte_buffer request;
  require(!command_entry<get_loss_command>::encode(request, wire_format{}, job, array_sink{slot}),
          "the parent cannot write into its own slot");

  auto& region = *slots.region();
  auto child_reply = serve(*message, *child_region, region);
  parent_reads(*message, job, slot);

  // The child's own reply goes back to the parent: accepted exactly when the
  // child accepted a reference to this request's slot and shape.
  if (!child_reply)
    return 0;
  auto request_read = decode_command(*message);
  const auto* loss = request_read ? std::get_if<loss_command>(&*request_read) : nullptr;
  const bool to_this_slot = loss && loss->shared_posteriors && is_ok(*child_reply) &&
                            loss->shared_posteriors->offset == slot.offset &&
                            loss->shared_posteriors->rows == c.frames &&
                            loss->shared_posteriors->cols == c.dim;
  require(parent_reads(*child_reply, job, slot) == to_this_slot,
          "parent and child disagree about the child's reply");
  return 0;
}
