// The sequence-training scheduler over real sprint-sim children: every train
// reply equals what the synchronous pool gives for the same batch (loss, and
// hat_y = exp(log-posteriors) - error signal), bit for bit; and nothing is
// left behind.

#include "sprintrt/seqtrain_client.hpp"

#include <catch2/catch.hpp>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/integration/seqtrain_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

constexpr size_t dim = 6;

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
    test::check_epoch_equals_pool(sched, sync, segments, 3, dim);
  }
  test::check_nothing_left(fds);
}
