// The sequence-training scheduler (seqtrain_client, the trainer loop of its
// header: forward while have_space, train, finish_epoch):
// - its own cost: an epoch of sequences through the scheduler with no
//   trainer work, over one in-process simulated worker at zero delay with
//   criterion=zero, against the same batches sent straight to the same pool,
//   per sequence;
// - its overlap: epochs whose trainer works 10 ms per batch (a spin) while
//   the workers take 10 ms per sequence (a reply delay that uses no CPU, so
//   that trainer and workers do not compete for the cores), over in-process
//   workers and sprint-sim children, without look-ahead (forward delay =
//   batch size + 1) and at the default forward delay, against the bound of a
//   perfect overlap, max(trainer time, Sprint time / workers).

#include <chrono>

#include "criterion/random_posteriors.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "tools/bench/benchmarks.hpp"

namespace sprintrt::bench {

namespace {

// Batches of sequences, each one forward message and its training layout,
// made once: the trainer's forward pass is not measured.
struct epoch_data {
  epoch_data(size_t sequences, size_t per_batch, size_t frames, size_t dim,
             const std::string& prefix)
      : per_batch(per_batch) {
    for (size_t b = 0; b < sequences / per_batch; ++b) {
      forward_sequences f;
      f.data.log_posteriors = tensor::zeros({frames, per_batch, dim});
      criterion::fill_random_log_posteriors(f.data.log_posteriors.data(), frames * per_batch, dim,
                                            b);
      seqtrain_batch layout{frames, per_batch, {}};
      for (size_t j = 0; j < per_batch; ++j) {
        const size_t seq = b * per_batch + j;
        f.seq_indices.push_back(seq);
        f.data.seq_lengths.push_back(static_cast<int64_t>(frames));
        f.data.tags.push_back(prefix + std::to_string(seq));
        layout.parts.push_back({seq, j, 0, 0, frames});
      }
      forwards.push_back(std::move(f));
      layouts.push_back(std::move(layout));
    }
  }

  std::vector<criterion::corpus_entry> corpus_entries() const {
    std::vector<criterion::corpus_entry> entries;
    for (const auto& f : forwards)
      for (const auto& tag : f.data.tags)
        entries.push_back({tag, {1, 2, 3, 4}});
    return entries;
  }

  // One epoch through `sched`, calling `train_work` after each train reply.
  template <class Work>
  seqtrain_stats epoch(seqtrain_client& sched, uint64_t number, Work&& train_work) const {
    check(sched.start_epoch(number), "start_epoch");
    size_t next = 0;
    for (size_t i = 0; i < forwards.size(); ++i) {
      if (next == i)
        check(sched.forward(forwards[next++]), "forward");
      unwrap(sched.train({layouts[i]}), "train");
      while (next < forwards.size() && unwrap(sched.have_space(per_batch), "have_space"))
        check(sched.forward(forwards[next++]), "forward");
      train_work();
    }
    return unwrap(sched.finish_epoch(), "finish_epoch");
  }

  size_t per_batch;
  std::vector<forward_sequences> forwards;
  std::vector<seqtrain_batch> layouts;
};

struct cost_rig {
  explicit cost_rig(size_t sequences)
      : data(sequences, 2, 100, 40, "bench/seq-"), corpus(write_corpus(data.corpus_entries())),
        pool(world().runtime().pool(unwrap(
            sim_worker_source(sim_options(corpus.path, 1, {zero_criterion})), "sim workers"))),
        direct(world().runtime(), pool), sched(world().runtime(), pool, seqtrain_options{}) {
    scheduled();
    straight();
  }

  void scheduled() {
    data.epoch(sched, ++epochs, [] {});
  }

  void straight() {
    for (const auto& f : data.forwards)
      unwrap(direct.compute(f.data), "batch");
  }

  epoch_data data;
  bench_corpus corpus;
  worker_pool_actor pool;
  pool_client direct;
  seqtrain_client sched;
  uint64_t epochs = 0;
};

// The trainer's own work per batch: one core busy for `d`.
void spin_for(std::chrono::milliseconds d) {
  const auto until = bench_clock::now() + d;
  while (bench_clock::now() < until) {
  }
}

struct overlap_spec {
  size_t sequences;
  size_t workers = 2;
  size_t per_batch = 2;
  std::chrono::milliseconds sprint{10};
  std::chrono::milliseconds trainer{10};
};

struct overlap_rig {
  overlap_rig(const overlap_spec& s, bool children)
      : data(s.sequences, s.per_batch, 50, 20, "bench/overlap-"),
        corpus(write_corpus(data.corpus_entries())) {
    auto opts = sim_options(corpus.path, s.workers);
    if (children) {
      opts.sprint_config.push_back(
          {{word_piece::literal, "--*.delay-ms=" + std::to_string(s.sprint.count())}});
      pool = world().runtime().pool(opts);
    } else {
      sim_worker_behavior timing;
      timing.min_delay = timing.max_delay = s.sprint;
      pool = world().runtime().pool(unwrap(sim_worker_source(opts, timing), "sim workers"));
    }
  }

  epoch_data data;
  bench_corpus corpus;
  worker_pool_actor pool;
  uint64_t epochs = 0;
};

void overlap(bench_state& state, const overlap_spec& s, bool children, size_t delay) {
  auto& rig = world().rig<overlap_rig>(children ? "overlap children" : "overlap in-process",
                                       [&] { return std::make_unique<overlap_rig>(s, children); });
  seqtrain_client sched{world().runtime(), rig.pool, {delay}};
  auto work = [&] { spin_for(s.trainer); };
  rig.data.epoch(sched, ++rig.epochs, work); // warm-up
  double wait = 0;
  double busy = 0;
  const double elapsed = time_manually(state, [&] {
    const auto stats = rig.data.epoch(sched, ++rig.epochs, work);
    wait += static_cast<double>(stats.trainer_wait_ns) * 1e-9;
    busy += static_cast<double>(stats.worker_busy_ns) * 1e-9;
  });
  const double batches = static_cast<double>(rig.data.forwards.size());
  const double trainer_ms = batches * static_cast<double>(s.trainer.count());
  const double sprint_ms =
      static_cast<double>(s.sequences * s.sprint.count()) / static_cast<double>(s.workers);
  state.counters["bound_ms"] = std::max(trainer_ms, sprint_ms);
  state.counters["wait"] = wait / elapsed;
  state.counters["utilization"] = busy / (elapsed * static_cast<double>(s.workers));
}

} // namespace

void register_seqtrain_benchmarks() {
  const bool quick = world().settings().quick;
  const size_t sequences = quick ? 64 : 512;
  const std::string shape =
      "seqs:" + std::to_string(sequences) + "/T:100/D:40/batch:2/sim_workers:1/criterion:zero";
  auto cost = [sequences]() -> cost_rig& {
    return world().rig<cost_rig>("seqtrain cost",
                                 [=] { return std::make_unique<cost_rig>(sequences); });
  };
  const std::string scheduled = "seqtrain/scheduler_epoch/" + shape;
  const std::string straight = "baseline/pool_client_compute/" + shape;
  for (const auto& name : {scheduled, straight})
    add_benchmark(
        name, benchmark::kMicrosecond, timing::manual,
        [cost, per = static_cast<double>(sequences), name, scheduled](bench_state& state) {
          auto& rig = cost();
          time_per_item(state, per, "us_per_sequence", [&] {
            if (name == scheduled)
              rig.scheduled();
            else
              rig.straight();
          });
        });
  declare_figure("the seqtrain scheduler per sequence (T=100, D=40, batches of 2, 1 in-process "
                 "sim worker, zero delay, criterion=zero), against the same batches straight to "
                 "the pool",
                 "us/sequence", scheduled + "@us_per_sequence", straight + "@us_per_sequence");

  overlap_spec s{quick ? size_t{16} : size_t{64}};
  const size_t none = s.per_batch + 1;
  const size_t standard = seqtrain_options{}.forward_seq_delay;
  for (bool children : {false, true})
    for (size_t delay : {none, standard}) {
      const std::string name = std::string{"seqtrain/overlap/"} +
                               (children ? "children" : "in_process") +
                               "/seqs:" + std::to_string(s.sequences) +
                               "/workers:2/forward_delay:" + std::to_string(delay);
      add_benchmark(name, benchmark::kMillisecond, timing::manual,
                    [=](bench_state& state) { overlap(state, s, children, delay); });
      declare_figure(std::string{"seqtrain epoch over 2 "} +
                         (children ? "sprint-sim children" : "in-process workers") +
                         (delay == none ? ", no look-ahead" : ", default forward delay") +
                         " (Sprint 10 ms per sequence, trainer 10 ms per batch), against a "
                         "perfect overlap",
                     "ms/epoch", name, name + "@bound_ms", "value/baseline",
                     delay == none ? "" : "<= 1.15");
    }
}

} // namespace sprintrt::bench
