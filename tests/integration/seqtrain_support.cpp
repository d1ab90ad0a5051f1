#include "tests/integration/seqtrain_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/seqtrain_client.hpp"

namespace sprintrt::test {

batch make_batch(const std::vector<test_segment>& segments, size_t first, size_t count, size_t dim,
                 int64_t shortest, int64_t spread, uint64_t seed) {
  size_t frames = 0;
  std::vector<int64_t> lengths;
  for (size_t i = first; i < first + count; ++i) {
    lengths.push_back(shortest + static_cast<int64_t>(i) % spread);
    frames = std::max(frames, static_cast<size_t>(lengths.back()));
  }
  batch b;
  b.log_posteriors = tensor::zeros({frames, count, dim});
  for (size_t j = 0; j < count; ++j) {
    auto rows = static_cast<size_t>(lengths[j]);
    auto lp = random_log_posteriors(rows, dim, seed + first + j);
    auto slice = segment_slice(b.log_posteriors, j, rows);
    for (size_t t = 0; t < rows; ++t)
      std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim, slice.row(t));
    b.tags.push_back(segments[first + j].name);
  }
  b.seq_lengths = lengths;
  return b;
}

void check_epoch_equals_pool(seqtrain_client& sched, const pool_client& sync,
                             const std::vector<test_segment>& segments, size_t batch_size,
                             size_t dim) {
  auto batch_at = [&](size_t i) {
    return make_batch(segments, i * batch_size, batch_size, dim, 4, 5, 100);
  };
  REQUIRE_FALSE(sched.start_epoch(1));
  size_t next = 0;
  const size_t num_batches = segments.size() / batch_size;
  for (size_t i = 0; i < num_batches; ++i) {
    while (next < num_batches && (next <= i || *sched.have_space(batch_size))) {
      forward_sequences f;
      f.data = batch_at(next);
      for (size_t j = 0; j < batch_size; ++j)
        f.seq_indices.push_back(next * batch_size + j);
      REQUIRE_FALSE(sched.forward(std::move(f)));
      ++next;
    }
    auto b = batch_at(i);
    seqtrain_batch layout;
    layout.num_frames = b.log_posteriors.dim(0);
    layout.num_slices = batch_size;
    for (size_t j = 0; j < batch_size; ++j)
      layout.parts.push_back(
          {i * batch_size + j, j, 0, 0, static_cast<uint64_t>(b.seq_lengths[j])});
    auto reply = sched.train({layout});
    if (!reply)
      FAIL("train: " << render(reply.error()));
    auto expected = sync.compute(b);
    REQUIRE(expected);
    INFO("batch " << i);
    CHECK(reply->loss == expected->loss);
    REQUIRE(reply->hat_y.shape() == b.log_posteriors.shape());
    for (size_t t = 0; t < layout.num_frames; ++t)
      for (size_t j = 0; j < batch_size; ++j)
        for (size_t d = 0; d < dim; ++d) {
          size_t k = (t * batch_size + j) * dim + d;
          float want = static_cast<int64_t>(t) < b.seq_lengths[j]
                           ? std::exp(b.log_posteriors.data()[k]) - expected->error_signal.data()[k]
                           : 0.0f;
          CHECK(reply->hat_y.data()[k] == want);
        }
    // The trainer's error signal is the pool's error signal again.
    auto dz = seqtrain_error_signal(b.log_posteriors, reply->hat_y, b.seq_lengths);
    REQUIRE(dz);
    for (size_t k = 0; k < dz->size(); ++k)
      CHECK(std::abs(dz->data()[k] - expected->error_signal.data()[k]) <= 1e-6f);
  }
  auto stats = sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->computed == segments.size());
  CHECK(stats->failed == 0);
  CHECK(stats->worker_busy_ns > 0);
}

} // namespace sprintrt::test
