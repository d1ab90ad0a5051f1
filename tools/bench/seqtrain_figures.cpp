// Figure f of `sprintrt-bench all`: what the sequence-training scheduler
// adds per sequence. The same sequences go through the scheduler (forward,
// train, as RETURNN's SeqTrainParallelControl drives it, with no trainer
// work in between) and straight to the same pool (one batch call each), over
// in-process simulated workers at zero delay with criterion=zero, so that
// neither pipes nor computation hide the scheduler's cost.

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/corpus.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/figure_runs.hpp"
#include "tools/bench/pool_probes.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t seq_frames = 100;
constexpr size_t seq_dim = 40;
// Two sequences per batch under the scheduler's default forward delay (5):
// one batch of look-ahead, as in `sprintrt-bench seqtrain`.
constexpr size_t seq_batch = 2;
const std::string seq_prefix = "bench/seq-";

void check(const caf::error& err, const char* what) {
  if (err)
    throw_error(what, err);
}

} // namespace

std::vector<figure> seqtrain_figures(figure_context& cx) {
  const size_t sequences = cx.options.quick ? 64 : 512;
  const int runs = cx.options.quick ? 3 : 10;
  const size_t batches = sequences / seq_batch;
  std::vector<sim::corpus_entry> entries;
  for (size_t i = 0; i < sequences; ++i)
    entries.push_back({seq_prefix + std::to_string(i), {1, 2, 3, 4}});
  auto corpus = write_corpus(entries);
  auto source = sim_worker_source(sim_options(cx.sprint_sim, corpus.path, 1, {zero_criterion}));
  if (!source)
    throw_error("sim_worker_source", source.error());
  auto& rt = cx.live.runtime();
  auto pool = rt.pool(*source);
  const pool_client direct{rt, pool};
  const seqtrain_options sched_options;
  seqtrain_client sched{rt, pool, sched_options};

  // Every batch made once: the trainer's forward pass is not measured.
  std::vector<forward_sequences> forwards;
  std::vector<seqtrain_batch> layouts;
  for (size_t b = 0; b < batches; ++b) {
    forward_sequences f;
    f.data.log_posteriors = tensor::zeros({seq_frames, seq_batch, seq_dim});
    fill_log_posteriors(f.data.log_posteriors.data(), seq_frames * seq_batch, seq_dim, b);
    seqtrain_batch layout{seq_frames, seq_batch, {}};
    for (size_t j = 0; j < seq_batch; ++j) {
      const size_t seq = b * seq_batch + j;
      f.seq_indices.push_back(seq);
      f.data.seq_lengths.push_back(static_cast<int64_t>(seq_frames));
      f.data.tags.push_back(seq_prefix + std::to_string(seq));
      layout.parts.push_back({seq, j, 0, 0, seq_frames});
    }
    forwards.push_back(std::move(f));
    layouts.push_back(std::move(layout));
  }

  // The trainer loop of seqtrain_client.hpp without the trainer's work.
  uint64_t epoch = 0;
  auto through_scheduler = [&] {
    check(sched.start_epoch(++epoch), "start_epoch");
    size_t next = 0;
    for (size_t i = 0; i < batches; ++i) {
      if (next == i)
        check(sched.forward(forwards[next++]), "forward");
      auto reply = sched.train({layouts[i]});
      if (!reply)
        throw_error("train", reply.error());
      while (next < batches) {
        auto space = sched.have_space(seq_batch);
        if (!space)
          throw_error("have_space", space.error());
        if (!*space)
          break;
        check(sched.forward(forwards[next++]), "forward");
      }
    }
    auto stats = sched.finish_epoch();
    if (!stats)
      throw_error("finish_epoch", stats.error());
  };
  auto straight = [&] {
    for (const auto& f : forwards) {
      auto result = direct.compute(f.data);
      if (!result)
        throw_error("batch", result.error());
    }
  };
  through_scheduler(); // warm-up
  straight();
  std::vector<double> scheduled, plain;
  for (int r = 0; r < runs; ++r) {
    time_each(1, scheduled, through_scheduler);
    time_each(1, plain, straight);
  }
  const double per = 1.0 / static_cast<double>(sequences);
  figure f;
  f.id = "f";
  f.title = "seqtrain scheduler per sequence (" + shape_text(seq_frames, seq_dim) +
            ", batches of " + std::to_string(seq_batch) +
            ", 1 in-process sim worker, zero delay, criterion=zero)";
  f.unit = "us/sequence";
  f.value = scaled(spread_of(scheduled), per);
  f.baseline_name = "the same batches straight to the pool";
  f.baseline = scaled(spread_of(plain), per);
  const double overhead = f.value->median - f.baseline->median;
  f.details = {{"sequences", sequences},
               {"batch", seq_batch},
               {"forward_seq_delay", sched_options.forward_seq_delay},
               {"overhead_us_per_sequence", overhead}};
  f.notes = {"one sample per epoch of " + std::to_string(sequences) +
             " sequences / sequences: start_epoch, forward while have_space, train (hat_y "
             "and loss laid out), finish_epoch; baseline: pool_client::compute of each "
             "forwarded batch. Overhead per sequence: " +
             format_fixed(overhead, 1) + " us (no target in the issue)."};
  return {f};
}

} // namespace sprintrt::bench
