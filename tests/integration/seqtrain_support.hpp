#pragma once

/// @file
/// Batches of a test corpus, and one checked training epoch through the
/// sequence-training scheduler: shared by the tests that run the scheduler
/// over children, locally or on remote pools.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sprintrt/batch.hpp"
#include "tests/integration/integration_support.hpp"

namespace sprintrt {
class pool_client;
class seqtrain_client;
} // namespace sprintrt

namespace sprintrt::test {

/// A [T, B, D] batch of the `count` segments from `first`, segment i of
/// length `shortest + i % spread`, with random log-posteriors (seeded by
/// `seed + i`).
batch make_batch(const std::vector<test_segment>& segments, size_t first, size_t count, size_t dim,
                 int64_t shortest, int64_t spread, uint64_t seed);

/// Runs one epoch (epoch 1) over `segments` in batches of `batch_size`
/// (made by `make_batch(..., 4, 5, 100)`) through `sched`, the trainer's
/// loop of `seqtrain_client.hpp`, and checks every train reply against
/// `sync` for the same batch: the loss and hat_y bit for bit, and the
/// trainer's error signal to 1e-6. Then checks the epoch's counters.
void check_epoch_equals_pool(seqtrain_client& sched, const pool_client& sync,
                             const std::vector<test_segment>& segments, size_t batch_size,
                             size_t dim);

} // namespace sprintrt::test
