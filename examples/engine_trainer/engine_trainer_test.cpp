// The example trainer against in-process simulated workers, in an engine's own
// actor system: what an engine's CI runs, without processes.

#include "engine_trainer.hpp"

#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <sprintrt/options.hpp>
#include <sprintrt/pool_client.hpp>
#include <sprintrt/seqtrain_scheduler.hpp>
#include <sprintrt/sim_worker.hpp>
#include <sprintrt/sprint_runtime.hpp>

namespace {

/// A corpus of `segments` CTC segments with a label or two each, written
/// into a fresh temporary directory; the options that compute on it.
sprintrt::sprint_options corpus_options(size_t segments, size_t workers) {
  char dir[] = "/tmp/engine-trainer-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string path = std::string{dir} + "/corpus.txt";
  std::ofstream corpus{path};
  for (size_t s = 0; s < segments; ++s)
    corpus << "seg-" << s << '\t' << 1 + s % 3 << (s % 2 ? " 2" : "") << '\n';
  corpus.close();
  auto opts = sprintrt::parse_options(R"({"sprintConfigStr": ["--*.corpus=)" + path +
                                      R"(", "--*.topology=ctc"], "numInstances": )" +
                                      std::to_string(workers) + "}");
  if (!opts)
    FAIL(sprintrt::render(opts.error()));
  return *opts;
}

/// `count` batches of `columns` segments each, [frames, columns, dim],
/// deterministic log-posteriors (log-softmax of a smooth pattern).
std::vector<sprintrt::batch> make_batches(size_t count, size_t columns, size_t frames, size_t dim) {
  std::vector<sprintrt::batch> batches;
  for (size_t i = 0; i < count; ++i) {
    std::vector<float> values(frames * columns * dim);
    for (size_t row = 0; row < frames * columns; ++row) {
      float norm = 0;
      for (size_t d = 0; d < dim; ++d)
        norm += std::exp(std::sin(static_cast<float>(row * 7 + d * 3 + i)));
      for (size_t d = 0; d < dim; ++d)
        values[row * dim + d] = std::sin(static_cast<float>(row * 7 + d * 3 + i)) - std::log(norm);
    }
    sprintrt::batch b;
    b.log_posteriors = *sprintrt::tensor::from_vector(std::move(values), {frames, columns, dim});
    for (size_t c = 0; c < columns; ++c) {
      b.tags.push_back("seg-" + std::to_string(i * columns + c));
      b.seq_lengths.push_back(static_cast<int64_t>(frames - c % 2));
    }
    batches.push_back(std::move(b));
  }
  return batches;
}

/// Each segment's loss through the blocking facade on `pool`, batch after
/// batch: the reference the trainer's results are held to.
std::vector<float> facade_losses(sprintrt::sprint_runtime& rt,
                                 const sprintrt::worker_pool_actor& pool,
                                 const std::vector<sprintrt::batch>& batches) {
  std::vector<float> losses;
  const sprintrt::pool_client client{rt, pool};
  for (const auto& b : batches) {
    auto result = client.compute(b);
    REQUIRE(result);
    losses.insert(losses.end(), result->loss.begin(), result->loss.end());
  }
  return losses;
}

/// The engine's own actor system, as an engine would configure it.
struct engine_config : caf::actor_system_config {
  engine_config() { set("scheduler.max-threads", 2); }
};

} // namespace

TEST_CASE("an engine's trainer keeps batches in flight and runs sequence training") {
  engine_config config;
  caf::actor_system system{config};
  const auto opts = corpus_options(12, 2);
  auto batches = make_batches(4, 3, 6, 4);
  sprintrt::sprint_runtime rt{system};
  auto source = sprintrt::sim_worker_source(opts);
  REQUIRE(source);
  auto pool = rt.pool(std::move(*source));
  auto scheduler = sprintrt::spawn_seqtrain_scheduler(rt, pool, {/*forward_seq_delay*/ 8});
  auto trainer = engine::spawn_trainer(system, {pool, scheduler, batches, 2});

  // What the blocking facade computes for each batch: the reference.
  const auto expected = facade_losses(rt, pool, batches);

  caf::scoped_actor self{system};
  self->request(trainer, caf::infinite, engine::full_sum_atom::value)
      .receive([&](std::vector<float>& losses) { CHECK(losses == expected); },
               [](caf::error& err) { FAIL(sprintrt::render(err)); });

  self->request(trainer, caf::infinite, engine::seqtrain_atom::value)
      .receive(
          [&](std::vector<float>& per_batch) {
            REQUIRE(per_batch.size() == batches.size());
            for (size_t i = 0; i < batches.size(); ++i) {
              float sum = 0;
              for (size_t c = 0; c < 3; ++c)
                sum += expected[i * 3 + c];
              CHECK(per_batch[i] == sum);
            }
          },
          [](caf::error& err) { FAIL(sprintrt::render(err)); });

  // sprintrt's shutdown waits for its own actors only: the trainer, the
  // engine's, is still there and is the engine's to stop.
  rt.shutdown();
  caf::anon_send_exit(trainer, caf::exit_reason::user_shutdown);
}

TEST_CASE("a worker that dies once is replaced, and the trainer still gets every loss") {
  engine_config config;
  caf::actor_system system{config};
  const auto opts = corpus_options(12, 2);
  auto batches = make_batches(4, 3, 6, 4);
  sprintrt::sprint_runtime rt{system};
  // The reference: a pool whose workers never die.
  auto healthy = sprintrt::sim_worker_source(opts);
  REQUIRE(healthy);
  const auto expected = facade_losses(rt, rt.pool(std::move(*healthy)), batches);
  // One worker dies at its third request, once; its replacement serves on.
  sprintrt::sim_worker_behavior dies_once;
  dies_once.die_at_request = 3;
  dies_once.max_deaths = 1;
  auto source = sprintrt::sim_worker_source(opts, dies_once);
  REQUIRE(source);
  auto pool = rt.pool(std::move(*source));
  auto scheduler = sprintrt::spawn_seqtrain_scheduler(rt, pool, {8});
  auto trainer = engine::spawn_trainer(system, {pool, scheduler, batches, 2});
  caf::scoped_actor self{system};
  self->request(trainer, caf::infinite, engine::full_sum_atom::value)
      .receive([&](std::vector<float>& losses) { CHECK(losses == expected); },
               [](caf::error& err) { FAIL(sprintrt::render(err)); });
  auto stats = sprintrt::pool_client{rt, pool}.stats();
  REQUIRE(stats);
  uint64_t restarts = 0;
  for (const auto& w : stats->workers)
    restarts += w.restarts;
  CHECK(restarts == 1);
  rt.shutdown();
  caf::anon_send_exit(trainer, caf::exit_reason::user_shutdown);
}
