#include "actors/seqtrain/seqtrain_pipeline.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using sprintrt::errc;
using sprintrt::forward_sequences;
using sprintrt::tensor;
using sprintrt::detail::entry_pointer;
using sprintrt::detail::seqtrain_pipeline;

namespace {

/// Sequences `indices` with `frames` frames each, D = 3, log-posteriors
/// log(1/3) everywhere except `lp[0, 0, 0] = first`.
forward_sequences sequences(std::vector<uint64_t> indices, size_t frames = 2,
                            float first = std::log(1.0f / 3.0f)) {
  forward_sequences seqs;
  size_t columns = indices.size();
  std::vector<float> values(frames * columns * 3, std::log(1.0f / 3.0f));
  values[0] = first;
  seqs.data.log_posteriors = *tensor::from_vector(values, {frames, columns, 3});
  for (auto idx : indices) {
    seqs.data.seq_lengths.push_back(static_cast<int64_t>(frames));
    seqs.data.tags.push_back("seg-" + std::to_string(idx));
  }
  seqs.seq_indices = std::move(indices);
  return seqs;
}

/// Forwards `indices` into `p` and requires success.
void forward(seqtrain_pipeline& p, std::vector<uint64_t> indices) {
  auto seqs = sequences(std::move(indices));
  auto queued = p.forward(seqs);
  REQUIRE(queued);
}

/// Completes `entry` with `loss` and an error signal of 0.25 everywhere.
void complete(seqtrain_pipeline& p, const entry_pointer& entry, double loss) {
  auto& es = entry->hat_y;
  for (size_t r = 0; r < es.rows; ++r)
    for (size_t c = 0; c < es.cols; ++c)
      es.row(r)[c] = 0.25f;
  p.complete(entry, loss);
}

} // namespace

TEST_CASE("have_space is exactly kept + n < forward_seq_delay") {
  seqtrain_pipeline p{5};
  REQUIRE_FALSE(p.start_epoch(1));
  CHECK(p.have_space(4));
  CHECK_FALSE(p.have_space(5));
  forward(p, {0, 1, 2});
  CHECK(p.have_space(1));
  CHECK_FALSE(p.have_space(2));
  CHECK_FALSE(p.have_space(UINT64_MAX));
  // Moving between stages never changes the answer.
  auto a = p.take_next();
  auto b = p.take_next();
  CHECK(p.forward_queue() == 1);
  CHECK(p.in_flight() == 2);
  CHECK(p.have_space(1));
  CHECK_FALSE(p.have_space(2));
  complete(p, a, 1.0);
  complete(p, b, 2.0);
  CHECK(p.loss_data() == 2);
  CHECK(p.have_space(1));
  CHECK_FALSE(p.have_space(2));
  // Only a train range start frees space.
  REQUIRE_FALSE(p.set_range_start(2));
  CHECK(p.loss_data() == 0);
  CHECK(p.forward_queue() == 1);
  CHECK(p.have_space(3));
  CHECK_FALSE(p.have_space(4));
}

TEST_CASE("a delay of zero admits nothing") {
  seqtrain_pipeline p{0};
  REQUIRE_FALSE(p.start_epoch(0));
  CHECK_FALSE(p.have_space(0));
  CHECK_FALSE(p.have_space(1));
}

TEST_CASE("results join the loss data strictly in sequence order") {
  seqtrain_pipeline p{10};
  REQUIRE_FALSE(p.start_epoch(1));
  forward(p, {3, 7, 9});
  auto first = p.take_next();
  auto second = p.take_next();
  auto third = p.take_next();
  CHECK(p.take_next() == nullptr);
  CHECK(first->seq_idx == 3);
  CHECK(third->seq_idx == 9);
  complete(p, third, 3.0);
  complete(p, second, 2.0);
  CHECK(p.loss_data() == 0);
  CHECK(p.in_flight() == 3);
  CHECK(p.loss_data(9) == nullptr);
  complete(p, first, 1.0);
  CHECK(p.loss_data() == 3);
  CHECK(p.in_flight() == 0);
  REQUIRE(p.loss_data(7) != nullptr);
  CHECK(p.loss_data(7)->loss == 2.0);
  CHECK(p.loss_data(8) == nullptr);
}

TEST_CASE("hat_y is exp(log_posteriors) minus the error signal, in place") {
  seqtrain_pipeline p{10};
  REQUIRE_FALSE(p.start_epoch(1));
  auto seqs = sequences({0}, 2, std::log(0.5f));
  REQUIRE(p.forward(seqs));
  auto entry = p.take_next();
  complete(p, entry, 4.0);
  const auto* done = p.loss_data(0);
  REQUIRE(done != nullptr);
  CHECK(done->hat_y.row(0)[0] == std::exp(std::log(0.5f)) - 0.25f);
  CHECK(done->hat_y.row(1)[2] == std::exp(std::log(1.0f / 3.0f)) - 0.25f);
  // The forwarded batch is released once computed.
  CHECK(done->log_posteriors.storage == nullptr);
}

TEST_CASE("a skipped sequence's hat_y is its posteriors") {
  seqtrain_pipeline p{10};
  REQUIRE_FALSE(p.start_epoch(1));
  forward(p, {0});
  auto entry = p.take_next();
  p.complete(entry, INFINITY); // the worker left the error signal zero
  const auto* done = p.loss_data(0);
  REQUIRE(done != nullptr);
  CHECK(done->loss == INFINITY);
  CHECK(done->hat_y.row(1)[1] == std::exp(std::log(1.0f / 3.0f)));
}

TEST_CASE("a failed computation is kept as loss data with its error") {
  seqtrain_pipeline p{10};
  REQUIRE_FALSE(p.start_epoch(1));
  forward(p, {0, 1});
  auto a = p.take_next();
  auto b = p.take_next();
  p.complete(a, sprintrt::make_error(errc::child_failed, "crashed"));
  complete(p, b, 1.0);
  CHECK(p.loss_data() == 2);
  CHECK(p.loss_data(0)->failure == errc::child_failed);
  CHECK_FALSE(p.loss_data(1)->failure);
}

TEST_CASE("a range start drops older sequences in every stage; their results are discarded") {
  seqtrain_pipeline p{10};
  REQUIRE_FALSE(p.start_epoch(1));
  forward(p, {0, 1, 2, 3, 4});
  auto e0 = p.take_next();
  auto e1 = p.take_next();
  auto e2 = p.take_next();
  complete(p, e0, 1.0);
  complete(p, e2, 3.0);
  // [0 | 1, 2 | 3, 4]: starting at 2 drops 0 (loss data) and 1 (computing).
  REQUIRE_FALSE(p.set_range_start(2));
  CHECK(e1->dropped);
  CHECK(p.kept(2) != nullptr);
  CHECK(p.kept(1) == nullptr);
  // 2 had finished behind 1: now nothing holds it back.
  CHECK(p.loss_data() == 1);
  CHECK(p.in_flight() == 0);
  CHECK(p.forward_queue() == 2);
  complete(p, e1, 2.0);
  CHECK(p.loss_data() == 1);
  CHECK(p.loss_data(1) == nullptr);
  auto err = p.set_range_start(1);
  CHECK(err == errc::invalid_request);
  CHECK(sprintrt::error_message(err).find("before the previous start 2") != std::string::npos);
}

TEST_CASE("forward refuses bad rows naming the sequence and frame, and non-increasing indices") {
  seqtrain_pipeline p{10};
  auto no_epoch = sequences({0});
  CHECK(p.forward(no_epoch).error() == errc::invalid_request);
  REQUIRE_FALSE(p.start_epoch(1));
  auto message = [&](forward_sequences seqs) {
    auto queued = p.forward(seqs);
    REQUIRE_FALSE(queued);
    CHECK(queued.error() == errc::invalid_input);
    return sprintrt::error_message(queued.error());
  };
  CHECK(message(sequences({4}, 2, NAN)) ==
        "forward: batch: sequence 4 ('seg-4'), frame 0, class 0: log-posterior is NaN");
  CHECK(message(sequences({4}, 2, INFINITY)) ==
        "forward: batch: sequence 4 ('seg-4'), frame 0, class 0: log-posterior is +inf");
  CHECK(message(sequences({5, 5})).find("sequence 5 ('seg-5') does not come after sequence 5") !=
        std::string::npos);
  forward(p, {8});
  CHECK(message(sequences({8})).find("does not come after sequence 8") != std::string::npos);
  auto mismatch = sequences({9, 10});
  mismatch.seq_indices.pop_back();
  CHECK(message(mismatch) == "forward: 1 sequence indices for 2 tags");
  // Nothing of the refused forwards was queued.
  CHECK(p.forward_queue() == 1);
}

TEST_CASE("epochs: no second start, finish names what is left and still ends the epoch") {
  seqtrain_pipeline p{10};
  CHECK(p.finish_epoch() == errc::invalid_request);
  REQUIRE_FALSE(p.start_epoch(1));
  auto twice = p.start_epoch(2);
  CHECK(twice == errc::invalid_request);
  CHECK(sprintrt::error_message(twice) == "epoch 2 cannot start: epoch 1 is still running");
  forward(p, {0, 1, 2});
  auto computing = p.take_next();
  auto left = p.finish_epoch();
  CHECK(left == errc::invalid_request);
  CHECK(sprintrt::error_message(left) ==
        "epoch 1 finished with 2 forwarded sequence(s) not sent and 1 computation(s) "
        "unfinished, now discarded (sequences 0, 1, 2)");
  CHECK(computing->dropped);
  REQUIRE_FALSE(p.start_epoch(2));
  CHECK(p.have_space(9));
  // Indices start over in a new epoch.
  forward(p, {0});
  auto e = p.take_next();
  complete(p, e, 1.0);
  CHECK_FALSE(p.finish_epoch()); // loss data may remain
}
