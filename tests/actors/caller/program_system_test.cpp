// A runtime on the embedding program's own actor system: sprintrt's actors run
// there, its shutdown stops and waits for exactly the actors it made, the
// program's actors and system go on; a scheduler spawned and stopped without
// the blocking facade; sprintrt's log records in the program's logger.

#include "sprintrt/sprint_runtime.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <spdlog/logger.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include "sprintrt/error.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/seqtrain_scheduler.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;
using namespace std::chrono_literals;

namespace {

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"s0", {1, 2}}, {"s1", {3}}, {"s2", {2, 1}}}};
}

/// The program's own actor: answers an int with `factor` times it, until
/// stopped. (Spawned with an argument: CAF 0.17 dereferences a null
/// argument tuple for a function spawned without any.)
caf::behavior multiplier(int factor) {
  return {[factor](int x) { return factor * x; }};
}

/// Runs `shutdown` on another thread; whether it returned within `limit`
/// (a generous bound: the test is whether it waits for the program's actors
/// at all, which would be forever).
bool shuts_down_within(sprint_runtime& rt, std::chrono::seconds limit) {
  auto done = std::async(std::launch::async, [&rt] { rt.shutdown(); });
  const bool in_time = done.wait_for(limit) == std::future_status::ready;
  if (!in_time)
    FAIL_CHECK("shutdown still waits after " << limit.count() << " s");
  done.wait();
  return in_time;
}

} // namespace

TEST_CASE("a runtime on the program's actor system runs its pools there") {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto fx = make_corpus();
  sprint_runtime rt{system};
  CHECK(&rt.system() == &system);
  CHECK_FALSE(rt.owns_system());
  const pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc", 2))};
  auto on_program_system =
      client.compute(test::random_batch({"s0", "s1", "s2"}, {3, 2, 3}, 3, 4, 7));
  REQUIRE(on_program_system);
  // The same batch on a runtime of its own gives the same bits.
  sprint_runtime own;
  CHECK(own.owns_system());
  const pool_client own_client{own, test::sim_corpus::pool(own, fx.options("--*.topology=ctc", 2))};
  auto on_own_system =
      own_client.compute(test::random_batch({"s0", "s1", "s2"}, {3, 2, 3}, 3, 4, 7));
  REQUIRE(on_own_system);
  CHECK(on_program_system->loss == on_own_system->loss);
  const auto& a = on_program_system->error_signal;
  const auto& b = on_own_system->error_signal;
  CHECK(std::vector<float>(a.data(), a.data() + a.size()) ==
        std::vector<float>(b.data(), b.data() + b.size()));
}

TEST_CASE("shutdown waits for the runtime's actors only; the program's go on") {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto program_actor = system.spawn(multiplier, 2);
  auto fx = make_corpus();
  {
    sprint_runtime rt{system};
    const pool_client client{rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"))};
    REQUIRE(client.compute(test::random_batch({"s0"}, {3}, 3, 4, 1)));
    auto scheduler = spawn_seqtrain_scheduler(rt, rt.pool(*sim_worker_source(fx.options())), {});
    REQUIRE(shuts_down_within(rt, 20s));
    // The runtime's actors are gone, the scheduler with them.
    caf::scoped_actor self{system};
    self->request(scheduler, caf::infinite, stats_atom::value)
        .receive([](seqtrain_stats&) { FAIL("the scheduler outlived the runtime's shutdown"); },
                 [](caf::error& err) { CHECK(err == caf::sec::request_receiver_down); });
  }
  // The runtime is gone; the program's system and actor still work.
  caf::scoped_actor self{system};
  self->request(program_actor, caf::infinite, 21)
      .receive([](int x) { CHECK(x == 42); }, [](caf::error& err) { FAIL(render(err)); });
  auto later = system.spawn(multiplier, 2);
  self->request(later, caf::infinite, 4)
      .receive([](int x) { CHECK(x == 8); }, [](caf::error& err) { FAIL(render(err)); });
  caf::anon_send_exit(program_actor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(later, caf::exit_reason::user_shutdown);
}

TEST_CASE("a request in flight at shutdown is answered with an error") {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  auto fx = make_corpus();
  sprint_runtime rt{system};
  sim_worker_behavior slow;
  slow.min_delay = slow.max_delay = std::chrono::seconds{60};
  auto pool = test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"), slow);
  caf::scoped_actor self{system};
  auto pending = self->request(pool, caf::infinite, compute_atom::value,
                               test::random_batch({"s0"}, {3}, 3, 4, 1));
  REQUIRE(shuts_down_within(rt, 20s));
  std::move(pending).receive(
      [](batch_result&) { FAIL("a batch was computed after the shutdown"); },
      [](caf::error& err) {
        CHECK((err == errc::cancelled || err == caf::sec::request_receiver_down));
      });
}

TEST_CASE("a scheduler spawned without the facade: its handle copied, an epoch, a stop") {
  auto fx = make_corpus();
  sprint_runtime rt;
  auto pool = test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"));
  seqtrain_options options;
  options.forward_seq_delay = 5;
  const auto scheduler = spawn_seqtrain_scheduler(rt, pool, options);
  const seqtrain_scheduler_actor copy = scheduler;
  caf::scoped_actor self{rt.system()};
  auto fail = [](caf::error& err) { FAIL(render(err)); };
  self->request(copy, caf::infinite, epoch_start_atom::value, uint64_t{1})
      .receive([](bool) {}, fail);
  forward_sequences sequences{{0}, test::random_batch({"s0"}, {3}, 3, 4, 1)};
  self->request(copy, caf::infinite, forward_atom::value, sequences)
      .receive([](uint64_t queued) { CHECK(queued == 1); }, fail);
  seqtrain_batch one{3, 1, {seqtrain_part{0, 0, 0, 0, 3}}};
  self->request(scheduler, caf::infinite, train_atom::value, std::vector<seqtrain_batch>{one})
      .receive(
          [](seqtrain_result& r) {
            REQUIRE(r.loss.size() == 1);
            CHECK(std::isfinite(r.loss[0]));
          },
          fail);
  self->request(scheduler, caf::infinite, epoch_finish_atom::value)
      .receive([](seqtrain_stats&) {}, fail);
  stop_seqtrain_scheduler(copy);
  self->wait_for(scheduler);
  self->request(scheduler, caf::infinite, stats_atom::value)
      .receive([](seqtrain_stats&) { FAIL("a stopped scheduler answered"); },
               [](caf::error& err) { CHECK(err == caf::sec::request_receiver_down); });
  // The pool stays.
  const pool_client client{rt, pool};
  CHECK(client.compute(test::random_batch({"s1"}, {2}, 2, 4, 3)));
  // Stopping one that ended does nothing.
  stop_seqtrain_scheduler(scheduler);
}

TEST_CASE("sprintrt logs into the program's logger, set in the runtime's settings") {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(50);
  auto program_logger = std::make_shared<spdlog::logger>("engine", sink);
  program_logger->set_pattern("%n %l %v");
  sprint_runtime::settings config;
  config.logger = program_logger;
  auto fx = make_corpus();
  {
    sprint_runtime rt{config};
    CHECK(&logger() == program_logger.get());
    sim_worker_behavior failing;
    failing.fail_segment = "s1";
    const pool_client client{rt,
                             test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"), failing)};
    CHECK_FALSE(client.compute(test::random_batch({"s0", "s1"}, {3, 2}, 3, 4, 1)));
  }
  std::vector<std::string> warnings;
  for (const auto& line : sink->last_formatted())
    if (line.find("engine warning") == 0 && line.find("s1") != std::string::npos)
      warnings.push_back(line);
  CHECK_FALSE(warnings.empty());
  set_logger(nullptr);
  CHECK(&logger() != program_logger.get());
}

TEST_CASE("by default sprintrt writes no log record to stdout") {
  set_logger(nullptr);
  auto fx = make_corpus();
  // stdout goes into a file while a segment fails (a warning).
  std::fflush(stdout);
  char path[] = "/tmp/sprintrt-stdout-XXXXXX";
  const int captured = ::mkstemp(path);
  REQUIRE(captured >= 0);
  const int saved = ::dup(STDOUT_FILENO);
  REQUIRE(::dup2(captured, STDOUT_FILENO) == STDOUT_FILENO);
  {
    sprint_runtime rt;
    sim_worker_behavior failing;
    failing.fail_segment = "s1";
    const pool_client client{rt,
                             test::sim_corpus::pool(rt, fx.options("--*.topology=ctc"), failing)};
    auto failed = client.compute(test::random_batch({"s0", "s1"}, {3, 2}, 3, 4, 1));
    logger().flush();
    std::fflush(stdout);
    ::dup2(saved, STDOUT_FILENO);
    CHECK_FALSE(failed);
  }
  ::close(saved);
  const off_t written = ::lseek(captured, 0, SEEK_END);
  ::close(captured);
  ::unlink(path);
  CHECK(written == 0);
}

TEST_CASE("no scheduler is made over an invalid pool, e.g. after the shutdown") {
  caf::actor_system_config cfg;
  caf::actor_system system{cfg};
  sprint_runtime rt{system};
  rt.shutdown();
  CHECK_FALSE(spawn_seqtrain_scheduler(rt, rt.pool(sprint_options{}), {5, 1, false}));
}
