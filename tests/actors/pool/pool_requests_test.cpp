// The pool's request shapes over in-process simulated workers: a batch is
// checked before any worker sees it, writes into a reused output's storage,
// fails with its failed segments grouped by cause and the code of the first
// in batch order, and an automata request refuses bad tags and names the
// segment that failed.

#include "actors/pool/pool_requests.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 5;

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"rec/a", {1, 2}}, {"rec/b", {3}}, {"rec/c", {1, 2, 3, 4}}}};
}

/// A client of a pool named "mine" of `workers` simulated workers with
/// `behavior`.
pool_client make_client(sprint_runtime& rt, const test::sim_corpus& corpus,
                        sim_worker_behavior behavior = {}, size_t workers = 2) {
  auto source = sim_worker_source(corpus.options("--*.topology=ctc", workers), std::move(behavior));
  REQUIRE(source);
  return pool_client{rt, rt.pool(std::move(*source), "mine")};
}

/// A [T, B, dim] batch of seeded random log-posteriors.
batch make_batch(std::vector<std::string> tags, std::vector<int64_t> lengths, size_t frames) {
  return test::random_batch(std::move(tags), std::move(lengths), frames, dim, 3);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Requests the workers of `client`'s pool answered, successfully or not.
uint64_t worker_requests(const pool_client& client) {
  auto stats = client.stats();
  REQUIRE(stats);
  uint64_t total = 0;
  for (const auto& w : stats->workers)
    total += w.requests_served + w.requests_failed;
  return total;
}

} // namespace

TEST_CASE("a batch that fails its checks is refused before any worker sees it") {
  auto fx = make_corpus();
  sprint_runtime rt;
  auto client = make_client(rt, fx);
  auto lengths = make_batch({"rec/a", "rec/b"}, {6}, 6);
  auto refused = client.compute(std::move(lengths));
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == errc::invalid_input);
  CHECK(contains(error_message(refused.error()),
                 "mine: batch: seq_lengths has 1 entries, log_posteriors has B = 2"));
  auto nan = make_batch({"rec/a", "rec/b"}, {6, 3}, 6);
  nan.log_posteriors.data()[(2 * 2 + 1) * dim + 3] = NAN;
  auto bad = client.compute(std::move(nan));
  REQUIRE_FALSE(bad);
  CHECK(error_message(bad.error()) ==
        "mine: batch: segment 1 ('rec/b'), frame 2, class 3: log-posterior is NaN");
  CHECK(worker_requests(client) == 0);
  // The pool goes on with the next batch.
  CHECK(client.compute(make_batch({"rec/a", "rec/b"}, {6, 3}, 6)));
  CHECK(worker_requests(client) == 2);
}

TEST_CASE("a batch writes into a reused output's storage, zeroing only its padding") {
  auto fx = make_corpus();
  sprint_runtime rt;
  auto client = make_client(rt, fx);
  auto fresh = client.compute(make_batch({"rec/c", "rec/b"}, {7, 4}, 7));
  REQUIRE(fresh);
  auto b = make_batch({"rec/c", "rec/b"}, {7, 4}, 7);
  b.reuse_error_signal = tensor::zeros({7, 2, dim});
  std::fill(b.reuse_error_signal.data(), b.reuse_error_signal.data() + 7 * 2 * dim, 9.0f);
  const float* storage = b.reuse_error_signal.data();
  auto reused = client.compute(std::move(b));
  REQUIRE(reused);
  CHECK(reused->error_signal.data() == storage);
  CHECK(reused->loss == fresh->loss);
  CHECK(
      std::vector<float>(reused->error_signal.data(), reused->error_signal.data() + 7 * 2 * dim) ==
      std::vector<float>(fresh->error_signal.data(), fresh->error_signal.data() + 7 * 2 * dim));
  // A reuse tensor of another shape is not used.
  auto other = make_batch({"rec/c", "rec/b"}, {7, 4}, 7);
  other.reuse_error_signal = tensor::zeros({7, 2, dim + 1});
  const float* other_storage = other.reuse_error_signal.data();
  auto fitted = client.compute(std::move(other));
  REQUIRE(fitted);
  CHECK(fitted->error_signal.data() != other_storage);
  CHECK(fitted->error_signal.shape() == std::vector<size_t>{7, 2, dim});
}

TEST_CASE("a batch with failed segments fails, listing them once per cause") {
  auto fx = make_corpus();
  sprint_runtime rt;
  sim_worker_behavior failing;
  failing.fail_segment = "rec/b";
  auto client = make_client(rt, fx, failing);
  auto result = client.compute(make_batch({"rec/a", "rec/b", "rec/c", "rec/b"}, {6, 3, 6, 2}, 6));
  REQUIRE_FALSE(result);
  CHECK(result.error() == errc::child_failed);
  const auto text = error_message(result.error());
  INFO(text);
  CHECK(contains(text, "mine: batch: 2 of 4 segments failed\n  2 segments: 1 ('rec/b'), 3 "
                       "('rec/b'): "));
  // One line per cause: the two failures are the same one.
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->batches == 1);
  CHECK(stats->segments == 2);
  CHECK(stats->failed_segments == 2);
}

TEST_CASE("a batch whose segments fail for different reasons gets the first one's code in batch "
          "order") {
  auto fx = make_corpus();
  sprint_runtime rt;
  sim_worker_behavior failing;
  failing.fail_segment = "rec/b";
  // One worker serves longest first: segment 1 (unknown) fails before
  // segment 0 (child_failed), yet segment 0 comes first in the batch.
  auto client = make_client(rt, fx, failing, 1);
  auto result = client.compute(make_batch({"rec/b", "rec/none"}, {2, 6}, 6));
  REQUIRE_FALSE(result);
  INFO(error_message(result.error()));
  CHECK(result.error() == errc::child_failed);
  CHECK(contains(error_message(result.error()),
                 "mine: batch: 2 of 2 segments failed\n  segment 0 ('rec/b'): child_failed: "));
  CHECK(contains(error_message(result.error()), "\n  segment 1 ('rec/none'): unknown_segment: "));
  // The other way round, the other code.
  auto swapped = client.compute(make_batch({"rec/none", "rec/b"}, {6, 2}, 6));
  REQUIRE_FALSE(swapped);
  CHECK(swapped.error() == errc::unknown_segment);
}

TEST_CASE("an automata request refuses an empty tag and names the segment that failed") {
  auto fx = make_corpus();
  sprint_runtime rt;
  auto client = make_client(rt, fx);
  auto empty = client.automata({"rec/a", ""});
  REQUIRE_FALSE(empty);
  CHECK(empty.error() == errc::invalid_input);
  CHECK(error_message(empty.error()) == "mine: batch: tag 1 is empty");
  auto unknown = client.automata({"rec/a", "rec/none"});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error() == errc::unknown_segment);
  INFO(error_message(unknown.error()));
  CHECK(contains(
      error_message(unknown.error()),
      "mine: automata: 1 of 2 segments failed\n  segment 1 ('rec/none'): unknown_segment: "));
  CHECK(client.automata({"rec/a", "rec/b"}));
}
