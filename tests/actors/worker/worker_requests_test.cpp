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
#include "tests/actors/worker/command_fixtures.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using test::job_2x3;
using test::unframe;

TEST_CASE("cancelling a loss request closes its gate before it answers") {
  auto job = job_2x3();
  job.gate = std::make_shared<output_gate>();
  auto gate = job.gate;
  segment_request req{command_request<get_loss_command>{std::move(job), {}}};
  req.cancel(make_error(errc::cancelled, "the pool stopped"));
  CHECK(gate->closed());
}

TEST_CASE("a child's end is described with cause, status and last output lines") {
  process::child_down down;
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
  // The same as fields, for grouping.
  auto fields = child_failure(down);
  CHECK(fields.cause == "no reply within 300 ms (replyTimeout)");
  CHECK(fields.child.pid == 42);
  CHECK(fields.child.ending.rfind("was killed by signal 9", 0) == 0);
  CHECK(fields.child.output_tail.rfind("line 10\n", 0) == 0);
  process::child_down never;
  never.cause = make_error(errc::spawn_failed, "sprintExecPath 'x' does not exist");
  CHECK(describe_down(never) ==
        "sprintExecPath 'x' does not exist; Sprint child was never started");
}

TEST_CASE("a segment request knows its kind, segment and command") {
  segment_request loss;
  loss.what = command_request<get_loss_command>{job_2x3(), {}};
  CHECK(std::holds_alternative<command_request<get_loss_command>>(loss.what));
  CHECK(loss.text() == "seg");
  CHECK(loss.command() == "get_loss_and_error_signal");

  command_request<export_fsa_command> by_name;
  by_name.work.text = "corpus/rec/seg-7";
  segment_request fsa;
  fsa.what = by_name;
  CHECK(std::holds_alternative<command_request<export_fsa_command>>(fsa.what));
  CHECK(fsa.text() == "corpus/rec/seg-7");
  CHECK(fsa.subject() == "segment 'corpus/rec/seg-7'");
  CHECK(fsa.command() == "export_allophone_state_fsa_by_segment_name");
  CHECK(request_doing(fsa) ==
        "export_allophone_state_fsa_by_segment_name of segment 'corpus/rec/seg-7'");
  auto failed = request_error(errc::child_exception, "worker 2", fsa, "no such segment");
  CHECK(failure_of(failed).worker == "worker 2");
  CHECK(error_message(failed) == "worker 2: export_allophone_state_fsa_by_segment_name of "
                                 "segment 'corpus/rec/seg-7': no such segment");

  command_request<export_fsa_command> by_orthography;
  by_orthography.work = {fsa_source::orthography, "3 17 5"};
  fsa.what = by_orthography;
  CHECK(fsa.text() == "3 17 5");
  CHECK(fsa.subject() == "orthography '3 17 5'");
  CHECK(fsa.command() == "export_allophone_state_fsa_by_orthography");
  CHECK(request_doing(fsa) == "export_allophone_state_fsa_by_orthography of orthography '3 17 5'");
}

TEST_CASE("each kind of request's entry encodes its command, bounds its reply and decodes it") {
  protocol::wire_format format;
  format.max_message_size = 12345;
  command_request<get_loss_command> loss{job_2x3(), {}};
  protocol::byte_buffer wire;
  REQUIRE_FALSE(entry_of<decltype(loss)>::encode(wire, format, loss.work, array_sink{}));
  auto command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  auto* loss_command = std::get_if<protocol::loss_command>(&*command);
  REQUIRE(loss_command);
  CHECK(loss_command->segment_name == "seg");
  CHECK(loss_command->frames == 2);
  CHECK(entry_of<decltype(loss)>::max_reply_size(format, loss.work) ==
        protocol::max_loss_reply_size(2, 3));
  float es[6] = {1, 2, 3, 4, 5, 6};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_loss_reply(wire, {}, 2.5, 2, 3, es));
  auto reply = entry_of<decltype(loss)>::decode(unframe(wire), loss.work, array_sink{});
  REQUIRE(reply);
  CHECK(*reply == 2.5);
  CHECK(loss.work.error_signal.row(1)[2] == 6);

  command_request<export_fsa_command> fsa;
  fsa.work.text = "corpus/rec/seg-7";
  wire.clear();
  REQUIRE_FALSE(entry_of<decltype(fsa)>::encode(wire, format, fsa.work, array_sink{}));
  command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  auto* fsa_command = std::get_if<protocol::fsa_command>(&*command);
  REQUIRE(fsa_command);
  CHECK(fsa_command->text == "corpus/rec/seg-7");
  // An automaton's size is not known from its request.
  CHECK(entry_of<decltype(fsa)>::max_reply_size(format, fsa.work) == 12345);
  std::vector<uint32_t> edges{0, 1, 4};
  std::vector<float> weights{0.5f};
  wire.clear();
  REQUIRE_FALSE(protocol::encode_fsa_reply(wire, {}, 2, edges, weights));
  auto automaton = entry_of<decltype(fsa)>::decode(unframe(wire), fsa.work, array_sink{});
  REQUIRE(automaton);
  CHECK(automaton->num_states == 2);
  CHECK(automaton->edges == edges);

  command_request<export_fsa_command> by_orthography;
  by_orthography.work = {fsa_source::orthography, "3 17 5"};
  wire.clear();
  REQUIRE_FALSE(
      entry_of<decltype(by_orthography)>::encode(wire, format, by_orthography.work, array_sink{}));
  command = protocol::decode_command(unframe(wire));
  REQUIRE(command);
  fsa_command = std::get_if<protocol::fsa_command>(&*command);
  REQUIRE(fsa_command);
  CHECK(fsa_command->text == "3 17 5");
  CHECK(fsa_command->source == fsa_source::orthography);
  wire.clear();
  REQUIRE_FALSE(protocol::encode_exception_reply(wire, {}, "no such word"));
  auto failed =
      entry_of<decltype(by_orthography)>::decode(unframe(wire), by_orthography.work, array_sink{});
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
  sprintrt::detail::fail_pending(in_flight, queue,
                                 sprintrt::make_error(errc::cancelled, "stopped"));
  CHECK(*log == std::vector<std::string>{"a: cancelled: stopped", "b: cancelled: stopped",
                                         "c: cancelled: stopped"});
  CHECK_FALSE(in_flight);
  CHECK(queue.empty());
  sprintrt::detail::fail_pending(in_flight, queue, sprintrt::make_error(errc::cancelled, "again"));
  CHECK(log->size() == 3);
}
