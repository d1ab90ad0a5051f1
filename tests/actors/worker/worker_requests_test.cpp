#include "actors/worker/worker_requests.hpp"

#include <catch2/catch.hpp>

#include <signal.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"

using namespace sprintrt;

namespace {

/// Decodes the single length-prefixed message in `wire`.
protocol::value unframe(const protocol::byte_buffer& wire) {
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed(wire.bytes()));
  auto msg = decoder.next();
  REQUIRE(msg);
  auto x = protocol::read_pickle(std::make_shared<const protocol::byte_buffer>(std::move(*msg)));
  REQUIRE(x);
  return *x;
}

segment_job job_2x3() {
  segment_job job;
  job.segment = "seg";
  job.log_posteriors = matrix_slice::dense(2, 3);
  // The error signal goes to rows 1 and 3 of a 4 x 3 buffer (stride 6 = two rows).
  job.error_signal = {make_storage(12, -1.0f), 3, 2, 3, 6};
  return job;
}

} // namespace

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
  auto loss = command_entry<get_loss_command>::decode(unframe(wire), job);
  REQUIRE(loss);
  CHECK(*loss == 2.5);
  CHECK(job.error_signal.storage->to_vector() ==
        std::vector<float>{-1, -1, -1, 1, 2, 3, -1, -1, -1, 4, 5, 6});
}

TEST_CASE("an exception or misshapen loss reply writes nothing") {
  auto job = job_2x3();
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_exception_reply(wire, {}, "KeyError: 'seg'"));
  auto raised = command_entry<get_loss_command>::decode(unframe(wire), job);
  CHECK(raised.error() == errc::child_exception);
  float es[3] = {1, 2, 3};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 1.0, 1, 3, es));
  CHECK(command_entry<get_loss_command>::decode(unframe(wire), job).error() ==
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
  auto loss = command_entry<get_loss_command>::decode(reply, job);
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::cancelled);
  CHECK_THAT(render(loss.error()), Catch::Contains("segment 'seg': its caller stopped waiting"));
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
  // A broken reply is still reported as broken, gate or not.
  float short_es[3] = {1, 2, 3};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 1.0, 1, 3, short_es));
  CHECK(command_entry<get_loss_command>::decode(unframe(wire), job).error() ==
        errc::invalid_message);
}

TEST_CASE("cancelling a loss request closes its gate before it answers") {
  auto job = job_2x3();
  job.gate = std::make_shared<output_gate>();
  auto gate = job.gate;
  segment_request req{command_request<get_loss_command>{std::move(job), {}}};
  req.cancel(make_error(errc::cancelled, "the pool stopped"));
  CHECK(gate->closed());
}

TEST_CASE("an FSA reply becomes a segment_fsa") {
  std::vector<uint32_t> edges{0, 1, 1, 2, 7, 8};
  std::vector<float> weights{0.5f, 0.25f};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(protocol::encode_fsa_reply(wire, {}, 3, edges, weights));
  auto fsa = command_entry<export_fsa_command>::decode(unframe(wire), fsa_query{});
  REQUIRE(fsa);
  CHECK(fsa->num_states == 3);
  CHECK(fsa->edges == edges);
  CHECK(fsa->weights == weights);
}

TEST_CASE("a child's end is described with cause, status and last output lines") {
  runtime::child_down down;
  down.cause = make_error(errc::timeout, "no reply within 300 ms (replyTimeout)");
  down.pid = 42;
  down.wait_status = SIGKILL; // killed by signal 9
  std::string output;
  for (int i = 0; i < 30; ++i)
    output += "line " + std::to_string(i) + "\n";
  down.output = output;
  auto text = describe_down(down);
  CHECK(text.rfind("no reply within 300 ms (replyTimeout); Sprint child pid 42 was killed by "
                   "signal 9",
                   0) == 0);
  CHECK(text.find("its output ended with:\nline 10\n") != std::string::npos);
  CHECK(text.find("line 9\n") == std::string::npos);
  CHECK(text.substr(text.size() - 7) == "line 29");
  runtime::child_down never;
  never.cause = make_error(errc::spawn_failed, "sprintExecPath 'x' does not exist");
  CHECK(describe_down(never) ==
        "sprintExecPath 'x' does not exist; Sprint child was never started");
}

TEST_CASE("a segment request knows its kind, segment and command") {
  segment_request loss;
  loss.what = command_request<get_loss_command>{job_2x3(), {}};
  CHECK(std::holds_alternative<command_request<get_loss_command>>(loss.what));
  CHECK(loss.segment() == "seg");
  CHECK(loss.command() == "get_loss_and_error_signal");

  command_request<export_fsa_command> by_name;
  by_name.work.text = "corpus/rec/seg-7";
  segment_request fsa;
  fsa.what = by_name;
  CHECK(std::holds_alternative<command_request<export_fsa_command>>(fsa.what));
  CHECK(fsa.segment() == "corpus/rec/seg-7");
  CHECK(fsa.subject() == "segment 'corpus/rec/seg-7'");
  CHECK(fsa.command() == "export_allophone_state_fsa_by_segment_name");
  CHECK(request_context("worker 2", fsa) ==
        "worker 2: export_allophone_state_fsa_by_segment_name of segment 'corpus/rec/seg-7'");

  command_request<export_fsa_command> by_orthography;
  by_orthography.work = {fsa_source::orthography, "3 17 5"};
  fsa.what = by_orthography;
  CHECK(fsa.segment() == "3 17 5");
  CHECK(fsa.subject() == "orthography '3 17 5'");
  CHECK(fsa.command() == "export_allophone_state_fsa_by_orthography");
  CHECK(request_context("worker 2", fsa) ==
        "worker 2: export_allophone_state_fsa_by_orthography of orthography '3 17 5'");
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

TEST_CASE("each kind of request encodes its command, bounds its reply and decodes it") {
  protocol::wire_format format;
  format.max_message_size = 12345;
  command_request<get_loss_command> loss{job_2x3(), {}};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(loss.encode(wire, format));
  auto command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  auto* loss_command = std::get_if<protocol::loss_command>(&*command);
  REQUIRE(loss_command);
  CHECK(loss_command->segment_name == "seg");
  CHECK(loss_command->frames == 2);
  CHECK(loss.max_reply_size(format) == protocol::max_loss_reply_size(2, 3));
  float es[6] = {1, 2, 3, 4, 5, 6};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 2.5, 2, 3, es));
  auto reply = loss.reply_from(unframe(wire));
  REQUIRE(reply);
  CHECK(*reply == 2.5);
  CHECK(loss.work.error_signal.row(1)[2] == 6);

  command_request<export_fsa_command> fsa;
  fsa.work.text = "corpus/rec/seg-7";
  wire.clear();
  REQUIRE_FALSE(fsa.encode(wire, format));
  command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  auto* fsa_command = std::get_if<protocol::fsa_command>(&*command);
  REQUIRE(fsa_command);
  CHECK(fsa_command->text == "corpus/rec/seg-7");
  // An automaton's size is not known from its request.
  CHECK(fsa.max_reply_size(format) == 12345);
  std::vector<uint32_t> edges{0, 1, 4};
  std::vector<float> weights{0.5f};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_fsa_reply(wire, {}, 2, edges, weights));
  auto automaton = fsa.reply_from(unframe(wire));
  REQUIRE(automaton);
  CHECK(automaton->num_states == 2);
  CHECK(automaton->edges == edges);

  command_request<export_fsa_command> by_orthography;
  by_orthography.work = {fsa_source::orthography, "3 17 5"};
  wire.clear();
  REQUIRE_FALSE(by_orthography.encode(wire, format));
  command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  fsa_command = std::get_if<protocol::fsa_command>(&*command);
  REQUIRE(fsa_command);
  CHECK(fsa_command->text == "3 17 5");
  CHECK(fsa_command->source == fsa_source::orthography);
  wire.clear();
  REQUIRE_FALSE(protocol::encode_exception_reply(wire, {}, "no such word"));
  auto failed = by_orthography.reply_from(unframe(wire));
  CHECK(failed.error() == errc::child_exception);
  CHECK(error_message(failed.error()) == "no such word");
}

namespace {

/// A request that records the error it was failed with.
struct recorded_request {
  std::shared_ptr<std::vector<std::string>> log;
  std::string name;
  void fail(const caf::error& err) { log->push_back(name + ": " + sprintrt::render(err)); }
};

} // namespace

TEST_CASE("fail_pending fails the request in flight, then the queue in order, and forgets them") {
  auto log = std::make_shared<std::vector<std::string>>();
  std::optional<recorded_request> in_flight = recorded_request{log, "a"};
  std::deque<recorded_request> queue{{log, "b"}, {log, "c"}};
  sprintrt::fail_pending(in_flight, queue, sprintrt::make_error(errc::cancelled, "stopped"));
  CHECK(*log == std::vector<std::string>{"a: cancelled: stopped", "b: cancelled: stopped",
                                         "c: cancelled: stopped"});
  CHECK_FALSE(in_flight);
  CHECK(queue.empty());
  sprintrt::fail_pending(in_flight, queue, sprintrt::make_error(errc::cancelled, "again"));
  CHECK(log->size() == 3);
}
