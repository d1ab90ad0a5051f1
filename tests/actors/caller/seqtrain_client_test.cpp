// The blocking facade of the sequence-training scheduler: the scheduler it
// owns ends with it or with the runtime, whichever comes first, and the
// trainer's error signal from a train reply.

#include "sprintrt/seqtrain_client.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"s0", {1, 2}}, {"s1", {3}}}};
}

} // namespace

TEST_CASE("seqtrain_error_signal is exp(log_posteriors) - hat_y within the lengths") {
  auto lp = *tensor::from_vector({std::log(0.5f), std::log(0.5f), std::log(0.25f), std::log(0.75f),
                                  0.0f, -INFINITY, std::log(0.1f), std::log(0.9f)},
                                 {2, 2, 2});
  auto hat_y = *tensor::from_vector({0.25f, 0.75f, 0.5f, 0.5f, 1.0f, 0.0f, 9.0f, 9.0f}, {2, 2, 2});
  auto dz = seqtrain_error_signal(lp, hat_y, {2, 1});
  REQUIRE(dz);
  std::vector<float> got(dz->data(), dz->data() + dz->size());
  CHECK(got == std::vector<float>{std::exp(std::log(0.5f)) - 0.25f,
                                  std::exp(std::log(0.5f)) - 0.75f,
                                  std::exp(std::log(0.25f)) - 0.5f,
                                  std::exp(std::log(0.75f)) - 0.5f, 0.0f, 0.0f, 0.0f, 0.0f});
  CHECK(error_message(seqtrain_error_signal(lp, hat_y, {2}).error()) ==
        "seqtrain_error_signal: 1 lengths for B = 2");
  CHECK(error_message(seqtrain_error_signal(lp, hat_y, {3, 1}).error()) ==
        "seqtrain_error_signal: length 3 of column 0 is not in 0..2");
  CHECK(error_message(seqtrain_error_signal(lp, tensor::zeros({2, 2, 3}), {2, 2}).error()) ==
        "seqtrain_error_signal: log_posteriors [2, 2, 2] and hat_y [2, 2, 3] must both be [T, B, "
        "D]");
}

TEST_CASE("a client kept alive does not hold up the runtime's shutdown") {
  auto fx = make_corpus();
  sprint_runtime rt;
  seqtrain_client sched{
      rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc")), {5, 1, false}};
  REQUIRE_FALSE(sched.start_epoch(1));
  // Returns only once every actor is gone: the scheduler ends with its pool.
  rt.shutdown();
  auto after = sched.have_space(1);
  REQUIRE_FALSE(after);
  CHECK(after.error() == caf::sec::request_receiver_down);
}

TEST_CASE("a client destroyed stops its scheduler; its handle answers no more") {
  auto fx = make_corpus();
  sprint_runtime rt;
  auto client = std::make_unique<seqtrain_client>(
      rt, test::sim_corpus::pool(rt, fx.options("--*.topology=ctc")),
      seqtrain_options{5, 1, false});
  REQUIRE_FALSE(client->start_epoch(1));
  auto have = client->have_space(4);
  REQUIRE(have);
  CHECK(*have);
  CHECK_FALSE(*client->have_space(5));
  auto scheduler = client->scheduler();
  client.reset();
  caf::scoped_actor self{rt.system()};
  self->wait_for(scheduler);
  self->request(scheduler, caf::infinite, stats_atom::value)
      .receive([](seqtrain_stats&) { FAIL("a stopped scheduler answered"); },
               [](caf::error& err) { CHECK(err == caf::sec::request_receiver_down); });
}
