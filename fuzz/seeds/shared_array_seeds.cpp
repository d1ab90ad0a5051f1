// Writes the seeds of shared_array_fuzzer into the directory named by its
// argument: for a few requests in a child's region (shared_array_case.hpp),
// the parent's command with its reference, written by the worker's own
// encoder into slots taken as the fuzz target takes them, and the replies a
// child writes with the protocol's encoders: the error signal in place, a
// skipped segment, a reference to another request's slot, an exception.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "actors/worker/commands.hpp"
#include "actors/worker/shared_slots.hpp"
#include "common/shared_region.hpp"
#include "fuzz/seeds/seed_writer.hpp"
#include "fuzz/shared_array_case.hpp"
#include "protocol/messages.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace sprintrt::protocol;

namespace {

/// Ends the program if `err` is an error.
void check(const caf::error& err, const char* what) {
  if (err) {
    std::fprintf(stderr, "shared_array_seeds: %s: %s\n", what, render(err).c_str());
    std::exit(1);
  }
}

/// Returns the value of `x`, or ends the program.
template <class T>
T must(caf::expected<T> x, const char* what) {
  if (!x)
    check(x.error(), what);
  return std::move(*x);
}

/// Writes the seeds of case `c` under names ending in `name`.
void write_case(fuzz::seed_writer& seeds, const fuzz::shared_array_case& c,
                const std::string& name) {
  const auto header = c.header();
  const wire_format unframed{framing::raw};
  // The slots as the fuzz target takes them for this case.
  shared_slots slots{must(shared_region::create("shared_array_seeds"), "memfd")};
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::optional<shared_slot> before;
  if (c.pages_before > 0)
    before = must(slots.acquire(c.pages_before * page), "slot before");
  segment_job job{"seg", matrix_slice::dense(c.frames, c.dim),
                  matrix_slice::dense(c.frames, c.dim)};
  const auto slot = must(slots.acquire(command_entry<get_loss_command>::shared_bytes(job)), "slot");
  const shared_array reference{slot.offset, c.frames, c.dim};

  byte_buffer request;
  check(command_entry<get_loss_command>::encode(request, unframed, job, array_sink{slot}),
        "request");
  seeds.write("request-" + name, header, request);
  byte_buffer piped;
  check(command_entry<get_loss_command>::encode(piped, unframed, job, array_sink{}),
        "piped request");
  seeds.write("piped-request-" + name, header, piped);

  byte_buffer reply;
  check(encode_loss_reply(reply, unframed, 2.5, reference), "reply");
  seeds.write("reply-" + name, header, reply);
  byte_buffer skipped;
  check(encode_loss_reply(skipped, unframed, std::numeric_limits<double>::infinity(), reference,
                          loss_encoding::numpy_float32),
        "skipped");
  seeds.write("skipped-" + name, header, skipped);
  if (before) {
    byte_buffer elsewhere;
    check(
        encode_loss_reply(elsewhere, unframed, 1.0, shared_array{before->offset, c.frames, c.dim}),
        "reply elsewhere");
    seeds.write("other-slot-" + name, header, elsewhere);
  }
}

} // namespace

int main(int argc, char** argv) {
  fuzz::seed_writer seeds{argc, argv};
  write_case(seeds, {3, 4}, "3x4");
  write_case(seeds, {16, 40, 1}, "16x40-after-1-page");
  write_case(seeds, {64, 64, 2, false, 1, true}, "64x64-between-slots-child-mapped-early");
  write_case(seeds, {1, 1, 3, true, 3}, "1x1-gap-before");
  const auto header = fuzz::shared_array_case{3, 4}.header();
  const wire_format unframed{framing::raw};
  byte_buffer accepted;
  check(encode_init_reply(accepted, unframed, "sprint-sim", protocol_version, true), "init");
  seeds.write("init-reply-accepting-the-region", header, accepted);
  byte_buffer exception;
  check(encode_exception_reply(exception, unframed,
                               "get_loss_and_error_signal for 'seg': shared memory: 48 bytes at "
                               "offset 4096 lie outside the region of 4096 bytes"),
        "exception");
  seeds.write("exception", header, exception);
  std::printf("shared_array_seeds: %d seeds\n", seeds.written());
  return 0;
}
