// The sequence-training scheduler's own cost per sequence and its overlap of
// trainer and workers (BENCHMARKS.md, "The sequence-training scheduler").

#include <chrono>

#include "criterion/random_posteriors.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t per_batch = 2;

// Batches of 2 sequences, each one forward message and its training layout,
// made once: the trainer's forward pass is not measured.
struct epoch_data {
  epoch_data(size_t sequences, size_t frames, size_t dim, const std::string& prefix) {
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

  bench_corpus corpus() const {
    std::vector<criterion::corpus_entry> entries;
    for (const auto& f : forwards)
      for (const auto& tag : f.data.tags)
        entries.push_back({tag, {1, 2, 3, 4}});
    return write_corpus(entries);
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

  std::vector<forward_sequences> forwards;
  std::vector<seqtrain_batch> layouts;
};

struct cost_rig {
  explicit cost_rig(size_t sequences)
      : data(sequences, 100, 40, "bench/seq-"), corpus(data.corpus()),
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

// The overlap epochs: 2 workers whose Sprint time is a 10 ms reply delay
// per sequence (no CPU), a trainer spinning 10 ms per batch of 2.
constexpr size_t overlap_workers = 2;
constexpr std::chrono::milliseconds sprint_delay{10};
constexpr std::chrono::milliseconds trainer_work{10};

struct overlap_rig {
  overlap_rig(size_t sequences, bool children)
      : data(sequences, 50, 20, "bench/overlap-"), corpus(data.corpus()) {
    auto opts = sim_options(corpus.path, overlap_workers);
    if (children) {
      opts.sprint_config.push_back(
          {{word_piece::literal, "--*.delay-ms=" + std::to_string(sprint_delay.count())}});
      pool = world().runtime().pool(opts);
    } else {
      sim_worker_behavior timing;
      timing.min_delay = timing.max_delay = sprint_delay;
      pool = world().runtime().pool(unwrap(sim_worker_source(opts, timing), "sim workers"));
    }
  }

  epoch_data data;
  bench_corpus corpus;
  worker_pool_actor pool;
  uint64_t epochs = 0;
};

void overlap(bench_state& state, size_t sequences, bool children, size_t delay) {
  auto& rig = world().rig<overlap_rig>(children ? "overlap children" : "overlap in-process", [&] {
    return std::make_unique<overlap_rig>(sequences, children);
  });
  seqtrain_client sched{world().runtime(), rig.pool, {delay}};
  auto work = [] { // the trainer's own work: one core busy
    const auto until = bench_clock::now() + trainer_work;
    while (bench_clock::now() < until) {
    }
  };
  rig.data.epoch(sched, ++rig.epochs, work); // warm-up
  double wait = 0;
  double busy = 0;
  const double elapsed = time_manually(state, [&] {
    const auto stats = rig.data.epoch(sched, ++rig.epochs, work);
    wait += static_cast<double>(stats.trainer_wait_ns) * 1e-9;
    busy += static_cast<double>(stats.worker_busy_ns) * 1e-9;
  });
  const double batches = static_cast<double>(rig.data.forwards.size());
  const double trainer_ms = batches * static_cast<double>(trainer_work.count());
  const double sprint_ms =
      static_cast<double>(sequences * sprint_delay.count()) / static_cast<double>(overlap_workers);
  state.counters["bound_ms"] = std::max(trainer_ms, sprint_ms);
  state.counters["wait"] = wait / elapsed;
  state.counters["utilization"] = busy / (elapsed * static_cast<double>(overlap_workers));
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
  for (auto [name, run] :
       {std::pair{scheduled, &cost_rig::scheduled}, std::pair{straight, &cost_rig::straight}})
    add_benchmark(name, benchmark::kMicrosecond, timing::manual,
                  [cost, per = static_cast<double>(sequences), run = run](bench_state& state) {
                    auto& rig = cost();
                    time_per_item(state, per, "us_per_sequence", [&] { (rig.*run)(); });
                  });
  declare_figure("the seqtrain scheduler per sequence (T=100, D=40, batches of 2, 1 in-process "
                 "sim worker, zero delay, criterion=zero), against the same batches straight to "
                 "the pool",
                 "us/sequence", scheduled + "@us_per_sequence", straight + "@us_per_sequence");

  const size_t overlap_sequences = quick ? 16 : 64;
  const size_t none = per_batch + 1;
  const size_t standard = seqtrain_options{}.forward_seq_delay;
  for (bool children : {false, true})
    for (size_t delay : {none, standard}) {
      const std::string name = std::string{"seqtrain/overlap/"} +
                               (children ? "children" : "in_process") +
                               "/seqs:" + std::to_string(overlap_sequences) +
                               "/workers:2/forward_delay:" + std::to_string(delay);
      add_benchmark(name, benchmark::kMillisecond, timing::manual, [=](bench_state& state) {
        overlap(state, overlap_sequences, children, delay);
      });
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
