// Message-driven tests of the sequence-training scheduler over pools of
// in-process simulated workers (no child processes): the admission rule,
// determinism under random worker delays, the reply layout against the
// criterion computed directly, and every error the trainer can run into.

#include "sprintrt/seqtrain_client.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "criterion/corpus.hpp"
#include "criterion/ctc_topology.hpp"
#include "sim/corpus_criterion.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

constexpr size_t num_classes = 5;

/// `count` segments "s<i>" with 1-3 labels in 1..4, then "long" with
/// `extra_labels` if there are any.
std::vector<criterion::corpus_entry> random_entries(size_t count,
                                                    std::vector<uint32_t> extra_labels) {
  std::mt19937_64 gen{7};
  std::vector<criterion::corpus_entry> entries;
  for (size_t i = 0; i < count; ++i) {
    std::vector<uint32_t> labels(1 + gen() % 3);
    for (auto& l : labels)
      l = static_cast<uint32_t>(1 + gen() % (num_classes - 1));
    entries.push_back({"s" + std::to_string(i), labels});
  }
  if (!extra_labels.empty())
    entries.push_back({"long", std::move(extra_labels)});
  return entries;
}

/// Such a corpus, and the options that run in-process workers on it.
struct corpus_fixture {
  test::sim_corpus files;
  sprint_options opts = files.options("--*.topology=ctc");

  explicit corpus_fixture(size_t count, std::vector<uint32_t> extra_labels = {})
      : files(random_entries(count, std::move(extra_labels))) {}

  /// A pool of `workers` simulated workers with `behavior`.
  worker_pool_actor pool(sprint_runtime& rt, size_t workers, sim_worker_behavior behavior = {}) {
    auto o = opts;
    o.num_instances = workers;
    return test::sim_corpus::pool(rt, o, std::move(behavior));
  }
};

/// Random-delay behaviour: 0-3 ms per reply, so that workers finish out of
/// order.
sim_worker_behavior random_delays(uint64_t seed) {
  sim_worker_behavior b;
  b.min_delay = std::chrono::microseconds{0};
  b.max_delay = std::chrono::microseconds{3000};
  b.seed = seed;
  return b;
}

/// A toy trainer's model: logits of sequence i are fixed random values plus
/// `bias` per class, log-softmaxed. Training moves `bias` by the summed
/// error signal, so later forwards depend on every earlier train reply.
struct toy_model {
  std::vector<double> bias = std::vector<double>(num_classes, 0.0);

  size_t frames(uint64_t seq) const { return 3 + seq % 4; }

  /// log-posteriors [T, D] of sequence `seq`.
  std::vector<float> log_posteriors(uint64_t seq) const {
    std::mt19937_64 gen{seq};
    std::normal_distribution<double> normal{0.0, 1.0};
    std::vector<float> out;
    for (size_t t = 0; t < frames(seq); ++t) {
      std::vector<double> z(num_classes);
      double max = -INFINITY;
      for (size_t d = 0; d < num_classes; ++d) {
        z[d] = normal(gen) + bias[d];
        max = std::max(max, z[d]);
      }
      double sum = 0;
      for (auto x : z)
        sum += std::exp(x - max);
      for (auto x : z)
        out.push_back(static_cast<float>(x - max - std::log(sum)));
    }
    return out;
  }
};

/// The forward message of `seqs` (tags "s<i>") under `model`.
forward_sequences make_forward(const toy_model& model, const std::vector<uint64_t>& seqs) {
  size_t frames = 0;
  for (auto s : seqs)
    frames = std::max(frames, model.frames(s));
  forward_sequences f;
  f.data.log_posteriors = tensor::zeros({frames, seqs.size(), num_classes});
  for (size_t j = 0; j < seqs.size(); ++j) {
    auto lp = model.log_posteriors(seqs[j]);
    auto slice = segment_slice(f.data.log_posteriors, j, model.frames(seqs[j]));
    for (size_t t = 0; t < slice.rows; ++t)
      std::memcpy(slice.row(t), lp.data() + t * num_classes, num_classes * sizeof(float));
    f.data.seq_lengths.push_back(static_cast<int64_t>(model.frames(seqs[j])));
    f.data.tags.push_back("s" + std::to_string(seqs[j]));
  }
  f.seq_indices = seqs;
  return f;
}

/// One whole-sequence part per column.
seqtrain_batch layout(const toy_model& model, const std::vector<uint64_t>& seqs) {
  seqtrain_batch b;
  b.num_slices = seqs.size();
  for (size_t j = 0; j < seqs.size(); ++j) {
    b.num_frames = std::max<uint64_t>(b.num_frames, model.frames(seqs[j]));
    b.parts.push_back({seqs[j], j, 0, 0, model.frames(seqs[j])});
  }
  return b;
}

/// What a training run produced: every have_space answer, every train
/// reply's loss and hat_y bits.
struct trace {
  std::vector<bool> admissions;
  std::vector<std::vector<float>> losses;
  std::vector<std::vector<float>> hat_ys;
};

/// Trains two epochs of `num_seqs` sequences in batches of 2 through
/// `sched` as `seqtrain_client.hpp` shows: after each train reply, forward
/// ahead (with the model not yet updated) while have_space allows.
trace train(seqtrain_client& sched, size_t num_seqs) {
  trace out;
  toy_model model;
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    REQUIRE_FALSE(sched.start_epoch(epoch));
    std::vector<std::vector<uint64_t>> batches;
    for (uint64_t s = 0; s < num_seqs; s += 2)
      batches.push_back(s + 1 < num_seqs ? std::vector<uint64_t>{s, s + 1}
                                         : std::vector<uint64_t>{s});
    size_t next = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (next == i)
        REQUIRE_FALSE(sched.forward(make_forward(model, batches[next++])));
      auto reply = sched.train({layout(model, batches[i])});
      REQUIRE(reply);
      out.losses.push_back(reply->loss);
      out.hat_ys.emplace_back(reply->hat_y.data(), reply->hat_y.data() + reply->hat_y.size());
      while (next < batches.size()) {
        auto space = sched.have_space(batches[next].size());
        REQUIRE(space);
        out.admissions.push_back(*space);
        if (!*space)
          break;
        REQUIRE_FALSE(sched.forward(make_forward(model, batches[next++])));
      }
      // "Training": move the bias by the summed hat_y (deterministic).
      for (size_t k = 0; k < reply->hat_y.size(); ++k)
        model.bias[k % num_classes] += 0.01 * reply->hat_y.data()[k];
    }
    auto stats = sched.finish_epoch();
    REQUIRE(stats);
    CHECK(stats->forwarded == num_seqs);
    CHECK(stats->computed == num_seqs);
    CHECK(stats->train_requests == batches.size());
  }
  return out;
}

} // namespace

TEST_CASE("training through the scheduler is deterministic under random worker delays") {
  corpus_fixture corpus{9};
  trace reference;
  {
    sprint_runtime rt;
    seqtrain_client sched{rt, corpus.pool(rt, 1), {5, 1, false}};
    reference = train(sched, 9);
  }
  // Look-ahead happened: some forwards were admitted beyond the current batch.
  CHECK(std::count(reference.admissions.begin(), reference.admissions.end(), true) > 0);
  for (auto [workers, seed] : {std::pair<size_t, uint64_t>{3, 1}, {2, 2}, {4, 3}}) {
    sprint_runtime rt;
    seqtrain_client sched{rt, corpus.pool(rt, workers, random_delays(seed)), {5, workers, false}};
    auto run = train(sched, 9);
    CHECK(run.admissions == reference.admissions);
    CHECK(run.losses == reference.losses);
    CHECK(run.hat_ys == reference.hat_ys);
  }
}

TEST_CASE("train replies hold the criterion's loss and exp(log_posteriors) - error signal") {
  corpus_fixture corpus{4};
  sprint_runtime rt;
  seqtrain_client sched{rt, corpus.pool(rt, 3, random_delays(5)), {5, 3, false}};
  toy_model model;
  REQUIRE_FALSE(sched.start_epoch(1));
  REQUIRE_FALSE(sched.forward(make_forward(model, {0, 1})));
  REQUIRE_FALSE(sched.forward(make_forward(model, {2, 3})));
  // Both batches side by side, sequence 3 in two chunks.
  seqtrain_batch first = layout(model, {0, 1});
  seqtrain_batch second;
  second.num_frames = 6;
  second.num_slices = 2;
  second.parts = {{2, 0, 0, 0, model.frames(2)}, {3, 1, 0, 0, 2}, {3, 1, 2, 2, model.frames(3)}};
  auto reply = sched.train({first, second});
  REQUIRE(reply);
  size_t n_time = std::max<size_t>(first.num_frames, second.num_frames);
  REQUIRE(reply->hat_y.shape() == std::vector<size_t>{n_time, 4, num_classes});
  REQUIRE(reply->loss.size() == 4);

  sim::corpus_criterion reference{corpus.files.read(),
                                  std::make_shared<criterion::ctc_topology>(0)};
  for (uint64_t seq = 0; seq < 4; ++seq) {
    auto lp = model.log_posteriors(seq);
    auto frames = static_cast<Eigen::Index>(model.frames(seq));
    Eigen::Map<const criterion::row_matrix_f> input{lp.data(), frames,
                                                    static_cast<Eigen::Index>(num_classes)};
    criterion::row_matrix_f es(frames, static_cast<Eigen::Index>(num_classes));
    auto expected = reference.loss_and_error_signal("s" + std::to_string(seq), input, es);
    REQUIRE(expected);
    size_t column = seq; // one sequence per column here
    INFO("sequence " << seq);
    CHECK(reply->loss[column] == static_cast<float>(expected->loss));
    for (Eigen::Index t = 0; t < frames; ++t)
      for (size_t d = 0; d < num_classes; ++d) {
        float want = std::exp(lp[static_cast<size_t>(t) * num_classes + d]) -
                     es(t, static_cast<Eigen::Index>(d));
        CHECK(reply->hat_y.data()[(static_cast<size_t>(t) * 4 + column) * num_classes + d] == want);
      }
  }
  auto stats = sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->computed == 4);
  CHECK(stats->loss_data == 0);
}

TEST_CASE("the admission rule through the actor, and the impossible range") {
  corpus_fixture corpus{8};
  sprint_runtime rt;
  seqtrain_client sched{rt, corpus.pool(rt, 2), {4, 2, false}};
  toy_model model;
  REQUIRE_FALSE(sched.start_epoch(1));
  CHECK(*sched.have_space(3));
  CHECK_FALSE(*sched.have_space(4));
  REQUIRE_FALSE(sched.forward(make_forward(model, {0, 1})));
  CHECK(*sched.have_space(1));
  CHECK_FALSE(*sched.have_space(2));
  // Four sequences can never be kept at once under a delay of 4.
  seqtrain_batch four = layout(model, {0, 1, 2, 3});
  auto impossible = sched.train({four});
  REQUIRE_FALSE(impossible);
  CHECK(impossible.error() == errc::invalid_request);
  CHECK(error_message(impossible.error()) ==
        "train: sequences [0, 4) hold 4 sequences, but the forward delay 4 admits at most 3 at "
        "once: this request could never be answered");
  auto unforwarded = sched.train({layout(model, {1, 2})});
  REQUIRE_FALSE(unforwarded);
  CHECK(error_message(unforwarded.error()) ==
        "train: sequence 2 of sequences [1, 3) has not been forwarded yet (forward a batch "
        "before training on it)");
  REQUIRE(sched.train({layout(model, {0, 1})}));
  // The range start moved to 0; training on 1 drops 0 and frees its place.
  REQUIRE(sched.train({layout(model, {1})}));
  CHECK(*sched.have_space(2));
  CHECK_FALSE(*sched.have_space(3));
  auto dropped = sched.train({layout(model, {0})});
  REQUIRE_FALSE(dropped);
  CHECK(error_message(dropped.error()) ==
        "train: the sequence range starts at 0, before the previous start 1 (it must never move "
        "backwards)");
  auto finished = sched.finish_epoch();
  CHECK(finished);
}

TEST_CASE("epoch and index errors through the actor") {
  corpus_fixture corpus{4};
  sprint_runtime rt;
  seqtrain_client sched{rt, corpus.pool(rt, 1), {5, 1, false}};
  toy_model model;
  CHECK(sched.forward(make_forward(model, {0})) == errc::invalid_request);
  CHECK(sched.train({layout(model, {0})}).error() == errc::invalid_request);
  REQUIRE_FALSE(sched.start_epoch(3));
  CHECK(error_message(sched.start_epoch(4)) == "epoch 4 cannot start: epoch 3 is still running");
  REQUIRE_FALSE(sched.forward(make_forward(model, {1, 2})));
  auto backwards = sched.forward(make_forward(model, {0}));
  CHECK(backwards == errc::invalid_input);
  CHECK(error_message(backwards) ==
        "forward: sequence 0 ('s0') does not come after sequence 2 (indices must increase "
        "strictly within an epoch)");
  // Sequence 0 was skipped by the forwards: it can never come now.
  auto skipped = sched.train({layout(model, {0, 1})});
  REQUIRE_FALSE(skipped);
  CHECK(error_message(skipped.error()) ==
        "train: sequence 0 of sequences [0, 2) was not forwarded in this epoch, or was dropped");
  REQUIRE(sched.train({layout(model, {1, 2})}));
  REQUIRE(sched.finish_epoch());
  REQUIRE_FALSE(sched.start_epoch(4));
  REQUIRE_FALSE(sched.forward(make_forward(model, {0})));
  auto reply = sched.train({layout(model, {0})});
  REQUIRE(reply);
  auto stats = sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->epoch == 4);
  CHECK(stats->forwarded == 1);
  CHECK(stats->computed == 1);
}

TEST_CASE("a failing sequence fails the train request that needs it; the scheduler goes on") {
  corpus_fixture corpus{6};
  sim_worker_behavior failing;
  failing.fail_segment = "s2";
  sprint_runtime rt;
  seqtrain_client sched{rt, corpus.pool(rt, 2, failing), {10, 2, false}};
  toy_model model;
  REQUIRE_FALSE(sched.start_epoch(1));
  REQUIRE_FALSE(sched.forward(make_forward(model, {0, 1})));
  REQUIRE_FALSE(sched.forward(make_forward(model, {2, 3})));
  REQUIRE(sched.train({layout(model, {0, 1})}));
  auto failed = sched.train({layout(model, {2, 3})});
  REQUIRE_FALSE(failed);
  CHECK(failed.error() == errc::child_failed);
  auto text = error_message(failed.error());
  CHECK(text.find("train: sequence 2 ('s2') could not be computed") == 0);
  CHECK(text.find("fails on purpose") != std::string::npos);
  // The next batch trains normally.
  REQUIRE_FALSE(sched.forward(make_forward(model, {4, 5})));
  REQUIRE(sched.train({layout(model, {4, 5})}));
  auto stats = sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->failed == 1);
  CHECK(stats->computed == 5);
}

TEST_CASE("a sequence Sprint skips has loss inf and hat_y = posteriors") {
  // 'long' has 6 labels: no CTC path fits in 3 frames.
  corpus_fixture corpus{1, {1, 2, 3, 4, 1, 2}};
  sprint_runtime rt;
  seqtrain_client sched{rt, corpus.pool(rt, 1), {5, 1, true}};
  REQUIRE_FALSE(sched.start_epoch(1));
  forward_sequences f;
  std::vector<float> lp(3 * num_classes, std::log(1.0f / num_classes));
  f.data.log_posteriors = *tensor::from_vector(lp, {3, 1, num_classes});
  f.data.seq_lengths = {3};
  f.data.tags = {"long"};
  f.seq_indices = {0};
  REQUIRE_FALSE(sched.forward(f));
  seqtrain_batch b{3, 1, {{0, 0, 0, 0, 3}}};
  auto reply = sched.train({b});
  REQUIRE(reply);
  CHECK(reply->loss == std::vector<float>{INFINITY});
  for (size_t k = 0; k < reply->hat_y.size(); ++k)
    CHECK(reply->hat_y.data()[k] == std::exp(std::log(1.0f / num_classes)));
  auto stats = sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->skipped == 1);
  REQUIRE(stats->timeline.size() == 1);
  CHECK(stats->timeline[0].seq_idx == 0);
  CHECK(stats->timeline[0].lane == 0);
  CHECK(stats->timeline[0].end_ns >= stats->timeline[0].start_ns);
}

namespace {

/// Lets a gated worker answer the request it holds for a segment.
using release_atom = caf::atom_constant<caf::atom("release")>;

/// A worker that holds every request until the test releases its segment,
/// then answers it with a zero error signal and the loss = its frames.
using gated_worker_actor = sprint_worker_actor::extend<caf::reacts_to<release_atom, std::string>>;

/// The gated workers a source made, and how many requests they hold.
struct gate {
  std::mutex mutex;
  std::vector<gated_worker_actor> workers;
  std::atomic<size_t> held{0};
};

struct gated_state {
  std::vector<std::pair<segment_job, caf::typed_response_promise<double>>> held;
};

gated_worker_actor::behavior_type
gated_worker(gated_worker_actor::stateful_pointer<gated_state> self, std::shared_ptr<gate> g) {
  return {
      [self, g](compute_atom, segment_job& job) {
        auto promise = self->make_response_promise<double>();
        self->state.held.emplace_back(std::move(job), promise);
        ++g->held;
        return promise;
      },
      [self](release_atom, const std::string& segment) {
        auto& held = self->state.held;
        for (auto i = held.begin(); i != held.end(); ++i)
          if (i->first.segment == segment) {
            i->second.deliver(static_cast<double>(i->first.log_posteriors.rows));
            held.erase(i);
            return;
          }
      },
      [](fsa_atom, fsa_query&) -> caf::result<segment_fsa> {
        return make_error(errc::invalid_input, "no automata here");
      },
      [](stats_atom) { return worker_stats{}; },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

/// Waits (up to 10 s) until `done()` holds; a test that needs an
/// asynchronous step to have happened, not a timing assertion.
template <class Predicate>
bool eventually(Predicate done) {
  for (int i = 0; i < 10000 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  return done();
}

} // namespace

TEST_CASE("results that arrive out of order enter the loss data in sequence order") {
  auto g = std::make_shared<gate>();
  worker_source source;
  source.description = "gated test workers";
  source.capacity = 3;
  source.make = [g](caf::actor_system& system, size_t, const std::string&) {
    auto worker = system.spawn(gated_worker, g);
    std::lock_guard<std::mutex> guard{g->mutex};
    g->workers.push_back(worker);
    return caf::actor_cast<sprint_worker_actor>(worker);
  };
  sprint_runtime rt;
  seqtrain_client sched{rt, rt.pool(std::move(source)), {10, 3, false}};
  toy_model model;
  REQUIRE_FALSE(sched.start_epoch(1));
  REQUIRE_FALSE(sched.forward(make_forward(model, {0, 1, 2})));
  REQUIRE(eventually([&] { return g->held == 3; }));
  auto release = [&](const std::string& segment) {
    std::lock_guard<std::mutex> guard{g->mutex};
    for (auto& worker : g->workers)
      caf::anon_send(worker, release_atom::value, segment);
  };
  auto computed = [&](uint64_t n) { return [&sched, n] { return sched.stats()->computed == n; }; };
  release("s2");
  release("s1");
  REQUIRE(eventually(computed(2)));
  auto stats = sched.stats();
  REQUIRE(stats);
  CHECK(stats->loss_data == 0);
  CHECK(stats->in_flight == 3);
  release("s0");
  REQUIRE(eventually(computed(3)));
  stats = sched.stats();
  REQUIRE(stats);
  CHECK(stats->loss_data == 3);
  CHECK(stats->in_flight == 0);
  auto reply = sched.train({layout(model, {0, 1, 2})});
  REQUIRE(reply);
  CHECK(reply->loss == std::vector<float>{3.0f, 4.0f, 5.0f});
  REQUIRE(sched.finish_epoch());
}

namespace {

/// A pool of three gated workers and a scheduler over it.
struct gated_fixture {
  std::shared_ptr<gate> g = std::make_shared<gate>();
  sprint_runtime rt;
  seqtrain_client sched{rt, rt.pool(source()), {10, 0, false}};

  worker_source source() {
    worker_source s;
    s.description = "gated test workers";
    s.capacity = 3;
    s.make = [g = g](caf::actor_system& system, size_t, const std::string&) {
      auto worker = system.spawn(gated_worker, g);
      std::lock_guard<std::mutex> guard{g->mutex};
      g->workers.push_back(worker);
      return caf::actor_cast<sprint_worker_actor>(worker);
    };
    return s;
  }

  void release(const std::string& segment) {
    std::lock_guard<std::mutex> guard{g->mutex};
    for (auto& worker : g->workers)
      caf::anon_send(worker, release_atom::value, segment);
  }
};

} // namespace

TEST_CASE("one train request at a time; no finish while it waits") {
  gated_fixture fx;
  toy_model model;
  REQUIRE_FALSE(fx.sched.start_epoch(1));
  REQUIRE_FALSE(fx.sched.forward(make_forward(model, {0, 1})));
  REQUIRE(eventually([&] { return fx.g->held == 2; }));
  caf::scoped_actor self{fx.rt.system()};
  auto waiting = self->request(fx.sched.scheduler(), caf::infinite, train_atom::value,
                               std::vector<seqtrain_batch>{layout(model, {0, 1})});
  // The request above is queued before these: the scheduler serves in order.
  auto second = fx.sched.train({layout(model, {0, 1})});
  REQUIRE_FALSE(second);
  CHECK(error_message(second.error()) ==
        "train: a train request is already waiting (send one at a time)");
  auto finish = fx.sched.finish_epoch();
  REQUIRE_FALSE(finish);
  CHECK(error_message(finish.error()) == "epoch 1 cannot finish while a train request waits");
  fx.release("s0");
  fx.release("s1");
  seqtrain_result reply;
  waiting.receive([&](seqtrain_result& r) { reply = std::move(r); },
                  [&](caf::error& err) { FAIL(render(err)); });
  CHECK(reply.loss == std::vector<float>{3.0f, 4.0f});
  REQUIRE(fx.sched.finish_epoch());
}

TEST_CASE("finish names what is left and discards it; the next epoch starts clean") {
  gated_fixture fx;
  toy_model model;
  REQUIRE_FALSE(fx.sched.start_epoch(3));
  REQUIRE_FALSE(fx.sched.forward(make_forward(model, {1, 2, 4, 5})));
  // Three lanes: 1, 2 and 4 are computing, 5 waits.
  REQUIRE(eventually([&] { return fx.g->held == 3; }));
  auto left = fx.sched.finish_epoch();
  REQUIRE_FALSE(left);
  CHECK(left.error() == errc::invalid_request);
  CHECK(error_message(left.error()) ==
        "epoch 3 finished with 1 forwarded sequence(s) not sent and 3 computation(s) "
        "unfinished, now discarded (sequences 1, 2, 4, 5)");
  REQUIRE_FALSE(fx.sched.start_epoch(4));
  REQUIRE_FALSE(fx.sched.forward(make_forward(model, {1})));
  // The old computations return and are discarded (nothing counts as
  // computed); the new sequence 1 gets a lane once one is free.
  fx.release("s1");
  fx.release("s2");
  fx.release("s4");
  REQUIRE(eventually([&] { return fx.g->held == 4; }));
  auto stats = fx.sched.stats();
  REQUIRE(stats);
  CHECK(stats->computed == 0);
  fx.release("s1");
  auto reply = fx.sched.train({layout(model, {1})});
  REQUIRE(reply);
  CHECK(reply->loss == std::vector<float>{4.0f});
  stats = fx.sched.finish_epoch();
  REQUIRE(stats);
  CHECK(stats->epoch == 4);
  CHECK(stats->computed == 1);
}
