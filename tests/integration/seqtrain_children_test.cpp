// The sequence-training scheduler over real sprint-sim children: every train
// reply equals what the synchronous pool gives for the same batch (loss, and
// hat_y = exp(log-posteriors) - error signal), bit for bit; and nothing is
// left behind.

#include "sprintrt/seqtrain_client.hpp"

#include <catch2/catch.hpp>

#include <cmath>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 6;

/// A [T, B, D] batch of segments `first`..`first + count - 1` with lengths
/// 4 + (i % 5).
batch make_batch(const std::vector<test::test_segment>& segments, size_t first, size_t count) {
  size_t frames = 0;
  std::vector<int64_t> lengths;
  for (size_t i = first; i < first + count; ++i) {
    lengths.push_back(static_cast<int64_t>(4 + i % 5));
    frames = std::max(frames, static_cast<size_t>(lengths.back()));
  }
  batch b;
  b.log_posteriors = tensor::zeros({frames, count, dim});
  for (size_t j = 0; j < count; ++j) {
    auto rows = static_cast<size_t>(lengths[j]);
    auto lp = test::random_log_posteriors(rows, dim, 100 + first + j);
    auto slice = segment_slice(b.log_posteriors, j, rows);
    for (size_t t = 0; t < rows; ++t)
      std::copy(lp.begin() + t * dim, lp.begin() + (t + 1) * dim, slice.row(t));
    b.tags.push_back(segments[first + j].name);
  }
  b.seq_lengths = lengths;
  return b;
}

} // namespace

TEST_CASE("the scheduler over sprint-sim children equals the synchronous pool") {
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 12, dim);
    auto opts = test::sim_options(test::corpus_path(dir));
    opts.num_instances = 2;
    sprint_runtime rt;
    pool_client sync{rt, opts};
    seqtrain_client sched{rt, rt.pool(opts), {7, 2, false}};
    REQUIRE_FALSE(sched.start_epoch(1));
    constexpr size_t batch_size = 3;
    size_t next = 0;
    const size_t num_batches = segments.size() / batch_size;
    for (size_t i = 0; i < num_batches; ++i) {
      while (next < num_batches && (next <= i || *sched.have_space(batch_size))) {
        forward_sequences f;
        f.data = make_batch(segments, next * batch_size, batch_size);
        for (size_t j = 0; j < batch_size; ++j)
          f.seq_indices.push_back(next * batch_size + j);
        REQUIRE_FALSE(sched.forward(std::move(f)));
        ++next;
      }
      auto b = make_batch(segments, i * batch_size, batch_size);
      seqtrain_batch layout;
      layout.num_frames = b.log_posteriors.dim(0);
      layout.num_slices = batch_size;
      for (size_t j = 0; j < batch_size; ++j)
        layout.parts.push_back(
            {i * batch_size + j, j, 0, 0, static_cast<uint64_t>(b.seq_lengths[j])});
      auto reply = sched.train({layout});
      REQUIRE(reply);
      auto expected = sync.compute(b);
      REQUIRE(expected);
      INFO("batch " << i);
      CHECK(reply->loss == expected->loss);
      REQUIRE(reply->hat_y.shape() == b.log_posteriors.shape());
      for (size_t t = 0; t < layout.num_frames; ++t)
        for (size_t j = 0; j < batch_size; ++j)
          for (size_t d = 0; d < dim; ++d) {
            size_t k = (t * batch_size + j) * dim + d;
            float want =
                static_cast<int64_t>(t) < b.seq_lengths[j]
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
  test::check_nothing_left(fds);
}
