// The pool's request shapes over in-process simulated workers: a batch is
// checked before any worker sees it, writes into a reused output's storage,
// fails with its failed segments grouped by cause and the code of the first
// in batch order, or, partial, answers the others' results beside each
// failure; and an automata request refuses bad tags and names the segment
// that failed.

#include "actors/pool/pool_requests.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

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

/// The batch of segments `picked` of `b`: their posteriors, lengths and
/// tags, in that order, over as many frames as `b`.
batch pick(const batch& b, const std::vector<size_t>& picked) {
  const size_t frames = b.log_posteriors.dim(0), width = b.log_posteriors.dim(1);
  batch out;
  out.log_posteriors = tensor::zeros({frames, picked.size(), dim});
  for (size_t t = 0; t < frames; ++t)
    for (size_t k = 0; k < picked.size(); ++k)
      std::copy_n(b.log_posteriors.data() + (t * width + picked[k]) * dim, dim,
                  out.log_posteriors.data() + (t * picked.size() + k) * dim);
  for (size_t i : picked) {
    out.seq_lengths.push_back(b.seq_lengths[i]);
    out.tags.push_back(b.tags[i]);
  }
  return out;
}

/// Segment `b`'s rows of a [T, B, dim] tensor (all T frames).
std::vector<float> rows_of(const tensor& t, size_t b) {
  std::vector<float> rows;
  for (size_t f = 0; f < t.dim(0); ++f)
    rows.insert(rows.end(), t.data() + (f * t.dim(1) + b) * dim,
                t.data() + (f * t.dim(1) + b + 1) * dim);
  return rows;
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

TEST_CASE("a partial batch returns the others' results exactly, and each failure with its code") {
  auto fx = make_corpus();
  sprint_runtime rt;
  sim_worker_behavior failing;
  failing.fail_segment = "rec/b";
  auto client = make_client(rt, fx, failing);
  auto full = make_batch({"rec/a", "rec/c", "rec/none", "rec/a"}, {6, 5, 4, 3}, 6);
  auto alone = client.compute(pick(full, {0, 1, 3}));
  REQUIRE(alone);
  // All or nothing by default.
  auto strict = client.compute(full);
  REQUIRE_FALSE(strict);
  CHECK(strict.error() == errc::unknown_segment);
  // Partial, into a reused output full of nines (the failed rows must not
  // keep them).
  auto b = full;
  b.partial = true;
  b.reuse_error_signal = tensor::zeros({6, 4, dim});
  std::fill_n(b.reuse_error_signal.data(), 6 * 4 * dim, 9.0f);
  auto result = client.compute(std::move(b));
  REQUIRE(result);
  REQUIRE(result->loss.size() == 4);
  CHECK(result->loss[0] == alone->loss[0]);
  CHECK(result->loss[1] == alone->loss[1]);
  CHECK(std::isnan(result->loss[2]));
  CHECK(result->loss[3] == alone->loss[2]);
  CHECK(rows_of(result->error_signal, 0) == rows_of(alone->error_signal, 0));
  CHECK(rows_of(result->error_signal, 1) == rows_of(alone->error_signal, 1));
  CHECK(rows_of(result->error_signal, 2) == std::vector<float>(6 * dim, 0.0f));
  CHECK(rows_of(result->error_signal, 3) == rows_of(alone->error_signal, 2));
  REQUIRE(result->failures.size() == 1);
  const auto& failure = result->failures[0];
  CHECK(failure.index == 2);
  CHECK(failure.tag == "rec/none");
  CHECK(failure.error == errc::unknown_segment);
  CHECK(contains(error_message(failure.error),
                 "get_loss_and_error_signal of segment 'rec/none': unknown segment 'rec/none'"));
  CHECK(result->succeeded(0));
  CHECK_FALSE(result->succeeded(2));
  // Failures of different kinds, in batch order, each with its own code.
  auto mixed = make_batch({"rec/b", "rec/a", "rec/none"}, {2, 6, 6}, 6);
  mixed.partial = true;
  auto outcomes = client.compute(std::move(mixed));
  REQUIRE(outcomes);
  REQUIRE(outcomes->failures.size() == 2);
  CHECK(outcomes->failures[0].index == 0);
  CHECK(outcomes->failures[0].error == errc::child_failed);
  CHECK(outcomes->failures[1].index == 2);
  CHECK(outcomes->failures[1].error == errc::unknown_segment);
  CHECK(std::isfinite(outcomes->loss[1]));
  // A batch refused by its checks fails as a whole, partial or not.
  auto refused = make_batch({"rec/a", "rec/none"}, {7, 3}, 6);
  refused.partial = true;
  CHECK(client.compute(std::move(refused)).error() == errc::invalid_input);
  auto stats = client.stats();
  REQUIRE(stats);
  CHECK(stats->batches == 4);
  CHECK(stats->failed_segments == 4);
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
