// The command entries: how each command's work is checked, weighed and
// named, how it is written to a child and how the child's reply is read,
// which pool counters an answer moves.

#include "actors/worker/commands.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "tests/actors/worker/command_fixtures.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using test::job_2x3;
using test::unframe;

TEST_CASE("jobs are checked before they are sent") {
  auto job = job_2x3();
  CHECK_FALSE(command_entry<get_loss_command>::check(job));
  job.segment.clear();
  CHECK(command_entry<get_loss_command>::check(job) == errc::invalid_input);
  job = job_2x3();
  job.error_signal.cols = 2;
  CHECK(render(command_entry<get_loss_command>::check(job))
            .find("error signal slice must be a valid 2 x 3 matrix") != std::string::npos);
  job = job_2x3();
  job.log_posteriors.storage.reset();
  CHECK(render(command_entry<get_loss_command>::check(job))
            .find("log-posteriors slice is empty or outside") != std::string::npos);
}

TEST_CASE("a loss reply's error signal goes into the job's strided slice") {
  auto job = job_2x3();
  float es[6] = {1, 2, 3, 4, 5, 6};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 2.5, 2, 3, es));
  auto loss = command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{});
  REQUIRE(loss);
  CHECK(*loss == 2.5);
  CHECK(job.error_signal.storage->to_vector() ==
        std::vector<float>{-1, -1, -1, 1, 2, 3, -1, -1, -1, 4, 5, 6});
}

TEST_CASE("an exception or misshapen loss reply writes nothing") {
  auto job = job_2x3();
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_exception_reply(wire, {}, "KeyError: 'seg'"));
  auto raised = command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{});
  CHECK(raised.error() == errc::child_exception);
  // A child that says it does not know the segment asked for.
  wire.clear();
  const std::string unknown_text = "unknown segment '" + job.segment + "': not in corpus 'c'";
  REQUIRE_FALSE(protocol::encode_exception_reply(wire, {}, unknown_text));
  auto unknown = command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{});
  CHECK(unknown.error() == errc::unknown_segment);
  CHECK(error_message(unknown.error()) == unknown_text);
  auto fsa = command_entry<export_fsa_command>::decode(
      unframe(wire), {fsa_source::segment_name, job.segment}, array_sink{});
  CHECK(fsa.error() == errc::unknown_segment);
  // An orthography is no segment: its exception stays what it was.
  auto by_orthography = command_entry<export_fsa_command>::decode(
      unframe(wire), {fsa_source::orthography, job.segment}, array_sink{});
  CHECK(by_orthography.error() == errc::child_exception);
  float es[3] = {1, 2, 3};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 1.0, 1, 3, es));
  CHECK(command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{}).error() ==
        errc::invalid_message);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
}

TEST_CASE("a valid loss reply for a job whose gate is closed writes nothing and is cancelled") {
  auto job = job_2x3();
  job.gate = std::make_shared<output_gate>();
  float es[6] = {1, 2, 3, 4, 5, 6};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 2.5, 2, 3, es));
  auto reply = unframe(wire);
  job.gate->close();
  auto loss = command_entry<get_loss_command>::decode(reply, job, array_sink{});
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::cancelled);
  CHECK_THAT(render(loss.error()), Catch::Contains("segment 'seg': its caller stopped waiting"));
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
  // A broken reply is still reported as broken, gate or not.
  float short_es[3] = {1, 2, 3};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 1.0, 1, 3, short_es));
  CHECK(command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{}).error() ==
        errc::invalid_message);
}

TEST_CASE("an FSA reply becomes a segment_fsa") {
  std::vector<uint32_t> edges{0, 1, 1, 2, 7, 8};
  std::vector<float> weights{0.5f, 0.25f};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_fsa_reply(wire, {}, 3, edges, weights));
  auto fsa = command_entry<export_fsa_command>::decode(unframe(wire), fsa_query{}, array_sink{});
  REQUIRE(fsa);
  CHECK(fsa->num_states == 3);
  CHECK(fsa->edges == edges);
  CHECK(fsa->weights == weights);
}

TEST_CASE("an FSA query needs a known source and a text") {
  CHECK_FALSE(command_entry<export_fsa_command>::check({fsa_source::segment_name, "a"}));
  CHECK_FALSE(command_entry<export_fsa_command>::check({fsa_source::orthography, "1 2"}));
  auto empty_name = command_entry<export_fsa_command>::check({fsa_source::segment_name, ""});
  CHECK(empty_name == errc::invalid_input);
  CHECK(error_message(empty_name) == "segment name is empty");
  auto empty_orthography = command_entry<export_fsa_command>::check({fsa_source::orthography, ""});
  CHECK(empty_orthography == errc::invalid_input);
  CHECK(error_message(empty_orthography) == "orthography is empty");
  auto unknown = command_entry<export_fsa_command>::check({static_cast<fsa_source>(7), "x"});
  CHECK(unknown == errc::invalid_input);
  CHECK(error_message(unknown) == "FSA query for 'x': unknown source 7");
}

TEST_CASE("a loss job weighs its frames, is named by its segment and counts as a segment") {
  using entry = command_entry<get_loss_command>;
  auto job = job_2x3();
  CHECK(entry::weight(job) == 2);
  CHECK(entry::subject(job) == "segment 'seg'");
  CHECK(entry::text(job) == "seg");
  CHECK(entry::name(job) == "get_loss_and_error_signal");
  pool_stats stats;
  entry::count_served(stats);
  entry::count_failed(stats);
  entry::count_failed(stats);
  CHECK(stats.segments == 1);
  CHECK(stats.failed_segments == 2);
  CHECK(stats.fsa_exports == 0);
}

TEST_CASE("admitting a loss job gives it an open gate once, and closing closes that gate") {
  using entry = command_entry<get_loss_command>;
  auto job = job_2x3();
  REQUIRE_FALSE(job.gate);
  CHECK_FALSE(entry::admit(job));
  REQUIRE(job.gate);
  auto gate = job.gate;
  CHECK_FALSE(gate->closed());
  CHECK_FALSE(entry::admit(job));
  CHECK(job.gate == gate);
  entry::close(job);
  CHECK(gate->closed());
  // A job without a gate has nothing to close.
  auto bare = job_2x3();
  entry::close(bare);
  CHECK_FALSE(bare.gate);
}

TEST_CASE("an export weighs one frame, is named by its source and counts as an export") {
  using entry = command_entry<export_fsa_command>;
  fsa_query by_name{fsa_source::segment_name, "corpus/rec/seg-7"};
  fsa_query by_orthography{fsa_source::orthography, "3 17 5"};
  CHECK(entry::weight(by_name) == 1);
  CHECK(entry::weight(by_orthography) == 1);
  CHECK(entry::subject(by_name) == "segment 'corpus/rec/seg-7'");
  CHECK(entry::subject(by_orthography) == "orthography '3 17 5'");
  CHECK(entry::text(by_orthography) == "3 17 5");
  CHECK(entry::name(by_name) == "export_allophone_state_fsa_by_segment_name");
  CHECK(entry::name(by_orthography) == "export_allophone_state_fsa_by_orthography");
  // Admitting checks the query.
  fsa_query empty{fsa_source::orthography, ""};
  CHECK(entry::admit(empty) == errc::invalid_input);
  CHECK_FALSE(entry::admit(by_name));
  pool_stats stats;
  entry::count_served(stats);
  entry::count_failed(stats);
  CHECK(stats.fsa_exports == 1);
  CHECK(stats.failed_segments == 0);
}

TEST_CASE("a loss job is encoded as its segment and strided log-posteriors") {
  using entry = command_entry<get_loss_command>;
  auto input = make_storage(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  segment_job job = job_2x3();
  // Rows 0 and 2 of a 4 x 3 buffer: 0 1 2 and 6 7 8.
  job.log_posteriors = {input, 0, 2, 3, 6};
  protocol::byte_buffer wire;
  protocol::wire_format format;
  REQUIRE_FALSE(entry::encode(wire, format, job, array_sink{}));
  auto command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  auto* loss = std::get_if<protocol::loss_command>(&*command);
  REQUIRE(loss);
  CHECK(loss->segment_name == "seg");
  CHECK(loss->frames == 2);
  std::vector<float> sent(6, -1.0f);
  REQUIRE(protocol::copy_rows(loss->log_posteriors, sent.data(), 3));
  CHECK(sent == std::vector<float>{0, 1, 2, 6, 7, 8});
  CHECK(entry::max_reply_size(format, job) == protocol::max_loss_reply_size(2, 3));
}

// -- through a child's shared region (docs/protocol.md section 7) ---------------

namespace {

/// A region with one slot for a 2 x 3 job, as the worker has it.
struct region_fixture {
  shared_slots slots{std::move(*shared_region::create("commands_test"))};
  shared_slot slot = *slots.acquire(2 * 3 * sizeof(float));

  float* floats(uint64_t offset, size_t count) {
    return reinterpret_cast<float*>(*slots.region()->view(offset, count * sizeof(float), 4));
  }
};

/// job_2x3 with posteriors 0.5, 1.5, ... in rows 0 and 2 of a 3 x 3 buffer.
segment_job strided_job() {
  auto job = job_2x3();
  std::vector<float> values(9);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) + 0.5f;
  job.log_posteriors = {make_storage(std::move(values)), 0, 2, 3, 6};
  return job;
}

} // namespace

TEST_CASE("a loss job through a shared slot: posteriors written there, a reference sent") {
  region_fixture region;
  auto job = strided_job();
  protocol::byte_buffer wire;
  REQUIRE_FALSE(command_entry<get_loss_command>::encode(wire, {}, job, array_sink{region.slot}));
  auto command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  const auto& sent = std::get<protocol::loss_command>(*command);
  REQUIRE(sent.shared_posteriors);
  CHECK(sent.shared_posteriors->offset == region.slot.offset);
  CHECK(sent.shared_posteriors->rows == 2);
  CHECK(sent.shared_posteriors->cols == 3);
  const float* in_region = region.floats(region.slot.offset, 6);
  CHECK(std::vector<float>(in_region, in_region + 6) ==
        std::vector<float>{0.5f, 1.5f, 2.5f, 6.5f, 7.5f, 8.5f});
}

TEST_CASE("a shared reply's error signal is copied once from the slot into the strided slice") {
  region_fixture region;
  auto job = job_2x3();
  float* in_region = region.floats(region.slot.offset, 6);
  for (size_t i = 0; i < 6; ++i)
    in_region[i] = static_cast<float>(i + 1);
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 2.5, {region.slot.offset, 2, 3}));
  auto loss = command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{region.slot});
  REQUIRE(loss);
  CHECK(*loss == 2.5);
  CHECK(job.error_signal.storage->to_vector() ==
        std::vector<float>{-1, -1, -1, 1, 2, 3, -1, -1, -1, 4, 5, 6});
  // The result is the parent's own: what the child writes later changes nothing.
  in_region[0] = -7;
  CHECK(job.error_signal.storage->to_vector()[3] == 1);
}

TEST_CASE("a shared reply that points outside the region or away from the slot is broken") {
  region_fixture region;
  auto job = job_2x3();
  auto decode_reply_at = [&](uint64_t offset) {
    protocol::byte_buffer wire;
    REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 0.0, {offset, 2, 3}));
    return command_entry<get_loss_command>::decode(unframe(wire), job, array_sink{region.slot});
  };
  const uint64_t end = region.slots.region()->size();
  auto outside = decode_reply_at(end);
  REQUIRE_FALSE(outside);
  CHECK(outside.error() == errc::invalid_message);
  CHECK_THAT(render(outside.error()), Catch::Contains("outside the region"));
  // The largest offset a reply can carry (an int64): offset + length wraps
  // nothing, but lies far outside.
  auto wrapping = decode_reply_at(static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - 7);
  REQUIRE_FALSE(wrapping);
  CHECK(wrapping.error() == errc::invalid_message);
  auto elsewhere = decode_reply_at(region.slot.offset + 4);
  REQUIRE_FALSE(elsewhere);
  CHECK(elsewhere.error() == errc::invalid_message);
  CHECK_THAT(render(elsewhere.error()), Catch::Contains("not over the posteriors"));
  auto misaligned = decode_reply_at(region.slot.offset + 2);
  REQUIRE_FALSE(misaligned);
  CHECK_THAT(render(misaligned.error()), Catch::Contains("not aligned"));
  // An array where a reference was due is broken too.
  float es[6] = {};
  protocol::byte_buffer piped;
  REQUIRE_FALSE(protocol::encode_loss_reply(piped, {}, 0.0, 2, 3, es));
  CHECK(command_entry<get_loss_command>::decode(unframe(piped), job, array_sink{region.slot})
            .error() == errc::invalid_message);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
}

TEST_CASE("only loss jobs move bytes through a shared region") {
  CHECK(command_entry<get_loss_command>::shared_bytes(job_2x3()) == 24);
  CHECK(command_entry<export_fsa_command>::shared_bytes(fsa_query{}) == 0);
}
