// How each command travels to a remote pool and back (remote_wire): on the
// trainer's end a loss job's posteriors copied out of their strided slice and
// the pool's error signal written back through the job's gate; on the
// server's end a job computed straight on the received bytes, its output
// answered without a copy; an export passed through as is.

#include "sprintrt/remote_interface.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "actors/worker/commands.hpp"
#include "sprintrt/error.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// A 2 x 3 loss job for "seg" whose posteriors are rows 0 and 2 of a 4 x 3
/// buffer holding 0..11, and whose error signal goes to rows 1 and 3 of a
/// 4 x 3 buffer of -1.
segment_job strided_job() {
  auto input = make_storage(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  return {"seg", {input, 0, 2, 3, 6}, {make_storage(12, -1.0f), 3, 2, 3, 6}};
}

/// A remote pool's answer: `loss` and a `rows` x `cols` error signal
/// holding 1, 2, 3, ...
remote_loss answer(double loss, uint64_t rows, uint64_t cols) {
  remote_loss a;
  a.loss = loss;
  a.error_signal = {rows, cols, make_float_storage(rows * cols)};
  for (size_t i = 0; i < rows * cols; ++i)
    a.error_signal.values->data()[i] = static_cast<float>(i + 1);
  return a;
}

} // namespace

TEST_CASE("a loss job goes to a remote pool as its segment and its rows, packed") {
  auto job = strided_job();
  auto sent = remote_wire<get_loss_command>::to_remote(job);
  CHECK(sent.segment == "seg");
  CHECK(sent.log_posteriors.rows == 2);
  CHECK(sent.log_posteriors.cols == 3);
  REQUIRE(sent.log_posteriors.values);
  CHECK(sent.log_posteriors.values->to_vector() == std::vector<float>{0, 1, 2, 6, 7, 8});
  // A copy: the job's own posteriors may change once it was sent.
  job.log_posteriors.row(0)[0] = 42;
  CHECK(sent.log_posteriors.values->to_vector()[0] == 0);
}

TEST_CASE("a remote pool's error signal goes into the job's strided slice") {
  auto job = strided_job();
  auto a = answer(2.5, 2, 3);
  auto loss = remote_wire<get_loss_command>::from_remote(a, job);
  REQUIRE(loss);
  CHECK(*loss == 2.5);
  CHECK(job.error_signal.storage->to_vector() ==
        std::vector<float>{-1, -1, -1, 1, 2, 3, -1, -1, -1, 4, 5, 6});
}

TEST_CASE("a remote error signal of the wrong shape is refused and writes nothing") {
  auto job = strided_job();
  auto a = answer(2.5, 1, 3);
  auto loss = remote_wire<get_loss_command>::from_remote(a, job);
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::invalid_message);
  CHECK(error_message(loss.error()) ==
        "segment 'seg': an error signal of 1 x 3 for 2 x 3 posteriors");
  remote_loss empty;
  empty.error_signal = {2, 3, nullptr};
  CHECK(remote_wire<get_loss_command>::from_remote(empty, job).error() == errc::invalid_message);
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
}

TEST_CASE("a remote answer for a job whose gate is closed is cancelled and writes nothing") {
  auto job = strided_job();
  job.gate = std::make_shared<output_gate>();
  job.gate->close();
  auto a = answer(2.5, 2, 3);
  auto loss = remote_wire<get_loss_command>::from_remote(a, job);
  REQUIRE_FALSE(loss);
  CHECK(loss.error() == errc::cancelled);
  CHECK(error_message(loss.error()) == "the caller stopped waiting");
  CHECK(job.error_signal.storage->to_vector() == std::vector<float>(12, -1.0f));
}

TEST_CASE("an export goes to a remote pool as its query and comes back as its automaton") {
  fsa_query query{fsa_source::orthography, "3 17 5"};
  auto sent = remote_wire<export_fsa_command>::to_remote(query);
  CHECK(sent.source == fsa_source::orthography);
  CHECK(sent.text == "3 17 5");
  remote_fsa a;
  a.fsa = {3, {0, 1, 4, 1, 2, 5}, {0.5f, 0.25f}};
  auto fsa = remote_wire<export_fsa_command>::from_remote(a, query);
  REQUIRE(fsa);
  CHECK(fsa->num_states == 3);
  CHECK(fsa->edges == std::vector<uint32_t>{0, 1, 4, 1, 2, 5});
  CHECK(fsa->weights == std::vector<float>{0.5f, 0.25f});
}

TEST_CASE("a server computes a received segment on its bytes and answers with its output") {
  remote_segment received{"seg", {2, 3, make_float_storage(6)}};
  const float* bytes = received.log_posteriors.values->data();
  auto job = remote_wire<get_loss_command>::to_local(received);
  REQUIRE(job);
  CHECK(job->segment == "seg");
  CHECK(job->log_posteriors.row(0) == bytes);
  CHECK(job->log_posteriors.rows == 2);
  CHECK(job->error_signal.rows == 2);
  CHECK(job->error_signal.cols == 3);
  CHECK(job->error_signal.storage != job->log_posteriors.storage);
  // Its own gate, which the server closes when the trainer goes.
  REQUIRE(job->gate);
  CHECK(job->gate->write_if_open([] {}));
  job->error_signal.row(1)[2] = 7.0f;
  auto reply = remote_wire<get_loss_command>::to_reply(1.5, *job);
  CHECK(reply.loss == 1.5);
  CHECK(reply.error_signal.rows == 2);
  CHECK(reply.error_signal.cols == 3);
  CHECK(reply.error_signal.values == job->error_signal.storage);
  CHECK(reply.error_signal.values->to_vector() == std::vector<float>{0, 0, 0, 0, 0, 7});
}

TEST_CASE("a server refuses a segment without frames before its pool sees it") {
  remote_segment empty{"seg", {0, 3, nullptr}};
  auto job = remote_wire<get_loss_command>::to_local(empty);
  REQUIRE_FALSE(job);
  CHECK(job.error() == errc::invalid_input);
  CHECK(error_message(job.error()) == "segment 'seg' has no frames");
  remote_segment no_values{"seg", {2, 3, nullptr}};
  CHECK(remote_wire<get_loss_command>::to_local(no_values).error() == errc::invalid_input);
}

TEST_CASE("a server passes an export's query on and answers with its automaton") {
  fsa_query received{fsa_source::segment_name, "rec/a"};
  auto query = remote_wire<export_fsa_command>::to_local(received);
  REQUIRE(query);
  CHECK(query->text == "rec/a");
  auto reply = remote_wire<export_fsa_command>::to_reply({2, {0, 1, 3}, {0.5f}}, *query);
  CHECK(reply.fsa.num_states == 2);
  CHECK(reply.fsa.edges == std::vector<uint32_t>{0, 1, 3});
  CHECK(reply.fsa.weights == std::vector<float>{0.5f});
}
