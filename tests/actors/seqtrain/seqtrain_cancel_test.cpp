// Cancelling a train request: the scheduler answers what its cancel did
// (cancelled a waiting request, came after the answer, or named no train
// request), and the blocking client's stop takes that answer, leaving
// nothing behind in its caller actor's mailbox.

#include "sprintrt/seqtrain_client.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/caller/caller_actors.hpp"
#include "actors/caller/runtime_access.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/stop_token.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;
using namespace std::chrono_literals;

namespace {

constexpr size_t dim = 5;

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"s0", {1, 2}}, {"s1", {3}}}};
}

/// A scheduler over one simulated worker whose replies take `delay`.
struct cancel_fixture {
  test::sim_corpus corpus = make_corpus();
  sprint_runtime rt;
  seqtrain_client sched;

  explicit cancel_fixture(std::chrono::microseconds delay)
      : sched{rt, test::sim_corpus::pool(rt, corpus.options("--*.topology=ctc"), behavior(delay)),
              seqtrain_options{5, 1, false}} {}

  static sim_worker_behavior behavior(std::chrono::microseconds delay) {
    sim_worker_behavior b;
    b.min_delay = b.max_delay = delay;
    return b;
  }

  /// Starts epoch 1 and forwards sequences 0 and 1 ("s0", "s1").
  void forward_two() {
    REQUIRE_FALSE(sched.start_epoch(1));
    forward_sequences seqs;
    seqs.seq_indices = {0, 1};
    seqs.data = test::random_batch({"s0", "s1"}, {4, 3}, 4, dim, 2);
    REQUIRE_FALSE(sched.forward(std::move(seqs)));
  }
};

/// A batch of the two forwarded sequences, whole, side by side.
std::vector<seqtrain_batch> both_sequences() {
  return {seqtrain_batch{4, 2, {{0, 0, 0, 0, 4}, {1, 1, 0, 0, 3}}}};
}

/// What the scheduler answers `self`'s cancel of its request `id`.
cancel_outcome cancel(caf::scoped_actor& self, const seqtrain_scheduler_actor& sched, uint64_t id) {
  cancel_outcome outcome = cancel_outcome::unknown;
  bool answered = false;
  self->request(sched, caf::infinite, cancel_atom::value, id)
      .receive(
          [&](cancel_outcome x) {
            outcome = x;
            answered = true;
          },
          [&](caf::error& err) { FAIL(render(err)); });
  CHECK(answered);
  return outcome;
}

} // namespace

TEST_CASE("a cancel of a waiting train request answers cancelled, then already_answered") {
  cancel_fixture fx{60s}; // nothing is computed during the test
  fx.forward_two();
  caf::scoped_actor self{fx.rt.system()};
  auto scheduler = fx.sched.scheduler();
  auto train = self->request(scheduler, caf::infinite, train_atom::value, both_sequences());
  const auto id = request_id_of(train.id());
  CHECK(cancel(self, scheduler, id) == cancel_outcome::cancelled);
  train.receive([](seqtrain_result&) { FAIL("a cancelled train request got a result"); },
                [](caf::error& err) {
                  CHECK(err == errc::cancelled);
                  CHECK(error_message(err) == "train: cancelled by its caller");
                });
  CHECK(cancel(self, scheduler, id) == cancel_outcome::already_answered);
  // Another sender's cancel of the same id names no request of its own.
  caf::scoped_actor other{fx.rt.system()};
  CHECK(cancel(other, scheduler, id) == cancel_outcome::unknown);
  CHECK(cancel(self, scheduler, id + 1000) == cancel_outcome::unknown);
  CHECK(to_string(cancel_outcome::already_answered) == "already_answered");
}

TEST_CASE("a cancel after the loss data answered the train request says already_answered") {
  cancel_fixture fx{0us};
  fx.forward_two();
  caf::scoped_actor self{fx.rt.system()};
  auto scheduler = fx.sched.scheduler();
  auto train = self->request(scheduler, caf::infinite, train_atom::value, both_sequences());
  train.receive([](seqtrain_result& r) { CHECK(r.loss.size() == 2); },
                [](caf::error& err) { FAIL(render(err)); });
  CHECK(cancel(self, scheduler, request_id_of(train.id())) == cancel_outcome::already_answered);
  // A train request refused at once was answered too.
  auto refused =
      self->request(scheduler, caf::infinite, train_atom::value,
                    std::vector<seqtrain_batch>{seqtrain_batch{4, 1, {{7, 0, 0, 0, 4}}}});
  refused.receive([](seqtrain_result&) { FAIL("sequence 7 was never forwarded"); },
                  [](caf::error& err) { CHECK(err == errc::invalid_request); });
  CHECK(cancel(self, scheduler, request_id_of(refused.id())) == cancel_outcome::already_answered);
}

TEST_CASE("a stopped seqtrain_client::train takes the cancel's answer with it") {
  cancel_fixture fx{60s};
  fx.forward_two();
  // Lets the call begin (its first check), then stops it while it waits.
  stop_source stop{[checks = 0]() mutable { return ++checks > 1; }};
  auto result = fx.sched.train(both_sequences(), stop.get_token());
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::cancelled);
  // The train request's answer and the cancel's were both taken: the
  // thread's actor serves the next call with an empty mailbox.
  CHECK(detail::runtime_access::callers(fx.rt).of_this_thread().mailbox().empty());
  auto stats = fx.sched.stats();
  REQUIRE(stats);
  CHECK(stats->forwarded == 2);
  CHECK(detail::runtime_access::callers(fx.rt).of_this_thread().mailbox().empty());
}
