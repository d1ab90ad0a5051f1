#include "tools/bench/seqtrain_bench.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/pool_setup.hpp"

namespace sprintrt::bench {

namespace {

using clock = std::chrono::steady_clock;

constexpr size_t frames = 50;
constexpr size_t dim = 20;

struct seqtrain_bench_options {
  bench_options common;
  std::string sprint_sim;
  size_t workers = 2;
  size_t sequences = 64;
  size_t batch_size = 2;
  /// Simulated Sprint time per sequence and trainer time per batch, in ms.
  int sprint_ms = 10;
  int trainer_ms = 10;
};

/// Keeps one core busy for `d`: the trainer's own work (forward pass,
/// backprop, update) stands in as a spin, so that it costs the same
/// wall time in every configuration.
void train_for(clock::duration d) {
  auto until = clock::now() + d;
  while (clock::now() < until) {
  }
}

/// The forward message of batch `b` (random but fixed log-posteriors).
forward_sequences make_forward(size_t b, size_t batch_size) {
  forward_sequences f;
  f.data.log_posteriors = tensor::zeros({frames, batch_size, dim});
  for (size_t j = 0; j < batch_size; ++j) {
    auto slice = segment_slice(f.data.log_posteriors, j, frames);
    std::vector<float> lp(frames * dim);
    fill_log_posteriors(lp.data(), frames, dim, b * batch_size + j);
    for (size_t t = 0; t < frames; ++t)
      std::copy(lp.begin() + static_cast<ptrdiff_t>(t * dim),
                lp.begin() + static_cast<ptrdiff_t>((t + 1) * dim), slice.row(t));
    f.data.seq_lengths.push_back(frames);
    f.data.tags.push_back("bench/" + std::to_string(b * batch_size + j));
    f.seq_indices.push_back(b * batch_size + j);
  }
  return f;
}

seqtrain_batch make_layout(size_t b, size_t batch_size) {
  seqtrain_batch layout{frames, batch_size, {}};
  for (size_t j = 0; j < batch_size; ++j)
    layout.parts.push_back({b * batch_size + j, j, 0, 0, frames});
  return layout;
}

/// One epoch's figures.
struct epoch_figures {
  double epoch_us = 0;
  double trainer_us = 0;
  double wait_fraction = 0;
  double utilization = 0;
};

/// Runs one epoch with the trainer loop of `seqtrain_client.hpp`.
epoch_figures run_epoch(seqtrain_client& sched, const seqtrain_bench_options& o, uint64_t epoch) {
  size_t num_batches = o.sequences / o.batch_size;
  auto trainer_time = std::chrono::milliseconds{o.trainer_ms};
  auto check = [](const caf::error& err) {
    if (err)
      throw std::runtime_error(render(err));
  };
  auto start = clock::now();
  check(sched.start_epoch(epoch));
  size_t next = 0;
  // The trainer's own time: running the model to forward a batch (here:
  // making its log-posteriors) and training on a batch (the spin).
  double trainer_us = 0;
  auto forward_next = [&] {
    auto made = clock::now();
    auto seqs = make_forward(next++, o.batch_size);
    trainer_us += micros_since(made);
    check(sched.forward(std::move(seqs)));
  };
  for (size_t i = 0; i < num_batches; ++i) {
    if (next == i)
      forward_next();
    auto reply = sched.train({make_layout(i, o.batch_size)});
    if (!reply)
      throw std::runtime_error(render(reply.error()));
    while (next < num_batches) {
      auto space = sched.have_space(o.batch_size);
      if (!space)
        throw std::runtime_error(render(space.error()));
      if (!*space)
        break;
      forward_next();
    }
    auto trained = clock::now();
    train_for(trainer_time);
    trainer_us += micros_since(trained);
  }
  auto stats = sched.finish_epoch();
  if (!stats)
    throw std::runtime_error(render(stats.error()));
  epoch_figures f;
  f.epoch_us = micros_since(start);
  f.trainer_us = trainer_us;
  f.wait_fraction = static_cast<double>(stats->trainer_wait_ns) / 1e3 / f.epoch_us;
  f.utilization = static_cast<double>(stats->worker_busy_ns) / 1e3 /
                  (f.epoch_us * static_cast<double>(o.workers));
  return f;
}

/// Runs `repeat` epochs (after one warm-up) and summarizes them as a row.
nlohmann::json measure_row(sprint_runtime& rt, worker_pool_actor pool, const std::string& source,
                           const std::string& lookahead, size_t delay,
                           const seqtrain_bench_options& o) {
  seqtrain_client sched{rt, std::move(pool), {delay}}; // one lane per worker
  run_epoch(sched, o, 0);
  std::vector<double> epochs, waits, utilizations;
  double trainer_us = 0;
  for (int r = 0; r < o.common.repeat; ++r) {
    auto f = run_epoch(sched, o, static_cast<uint64_t>(r + 1));
    epochs.push_back(f.epoch_us);
    waits.push_back(f.wait_fraction);
    utilizations.push_back(f.utilization);
    trainer_us = f.trainer_us;
  }
  auto median = [](std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    return xs[xs.size() / 2];
  };
  double sprint_us =
      static_cast<double>(o.sequences) * o.sprint_ms * 1e3 / static_cast<double>(o.workers);
  double bound_us = std::max(trainer_us, sprint_us);
  double epoch_us = median(epochs);
  return {{"workers", source},
          {"lookahead", lookahead},
          {"delay", delay},
          {"epoch_ms", epoch_us / 1e3},
          {"bound_ms", bound_us / 1e3},
          {"ratio", epoch_us / bound_us},
          {"wait", median(waits)},
          {"utilization", median(utilizations)}};
}

void run_seqtrain_bench(const seqtrain_bench_options& o, const std::string& argv0) {
  spdlog::set_level(spdlog::level::warn);
  if (o.sequences % o.batch_size != 0)
    throw std::runtime_error("--sequences must be a multiple of --batch-size");
  std::vector<sim::corpus_entry> segments;
  for (size_t i = 0; i < o.sequences; ++i)
    segments.push_back({"bench/" + std::to_string(i), {1, 2, 3, static_cast<uint32_t>(1 + i % 5)}});
  auto corpus = write_corpus(segments);
  auto opts = sim_options(find_sprint_sim(o.sprint_sim, argv0), corpus.path, o.workers);
  // No look-ahead: only the batch being trained is kept (the smallest delay
  // that admits it). The default: the scheduler's own default delay.
  const size_t none = o.batch_size + 1;
  const size_t standard = seqtrain_options{}.forward_seq_delay;

  std::vector<nlohmann::json> rows;
  {
    sim_worker_behavior timing;
    timing.min_delay = timing.max_delay = std::chrono::milliseconds{o.sprint_ms};
    auto source = sim_worker_source(opts, timing);
    if (!source)
      throw std::runtime_error(render(source.error()));
    sprint_runtime rt;
    auto pool = rt.pool(*source);
    rows.push_back(measure_row(rt, pool, "in-process", "none", none, o));
    rows.push_back(measure_row(rt, pool, "in-process", "default", standard, o));
  }
  {
    auto children = opts;
    children.sprint_config.push_back(
        {{word_piece::literal, "--*.delay-ms=" + std::to_string(o.sprint_ms)}});
    sprint_runtime rt;
    auto pool = rt.pool(children);
    rows.push_back(measure_row(rt, pool, "children", "none", none, o));
    rows.push_back(measure_row(rt, pool, "children", "default", standard, o));
  }
  section table{
      "epochs",
      "seqtrain: " + std::to_string(o.sequences) + " sequences in batches of " +
          std::to_string(o.batch_size) + ", " + std::to_string(o.workers) + " workers, Sprint " +
          std::to_string(o.sprint_ms) + " ms per sequence, trainer " +
          std::to_string(o.trainer_ms) + " ms per batch (median epoch of " +
          std::to_string(o.common.repeat) + ")",
      {{"workers", "workers", 12},
       {"lookahead", "look-ahead", 12},
       {"delay", "delay", 7},
       {"epoch_ms", "epoch ms", 10},
       {"bound_ms", "bound ms", 10},
       {"ratio", "ratio", 8},
       {"wait", "wait", 8},
       {"utilization", "util", 8}},
      rows,
      {"bound = max(trainer time, Sprint time / workers): the epoch time of a perfect overlap; "
       "ratio = epoch / bound (target at the default delay: <= 1.15)",
       "Sprint time is a reply delay (sim_worker_behavior, sprint-sim --*.delay-ms) that uses no "
       "CPU, so trainer and workers do not compete for the 2 cores; the trainer spins",
       "wait = time train requests waited / epoch; util = worker busy time / (epoch x workers)",
       "no look-ahead: forward_seq_delay = batch size + 1 (only the batch being trained is "
       "kept)",
       machine_load()}};
  report(o.common, "seqtrain", {table});
}

} // namespace

void add_seqtrain_bench(CLI::App& app, std::string argv0) {
  auto options = std::make_shared<seqtrain_bench_options>();
  options->common.repeat = 5;
  auto* command = app.add_subcommand(
      "seqtrain", "sequence-training scheduler: epoch time against max(trainer, Sprint / "
                  "workers), without look-ahead and at the default forward delay");
  add_common_options(*command, options->common);
  command->add_option("--sprint-sim", options->sprint_sim,
                      "the sprint-sim executable [<dir of this program>/../sprint-sim/sprint-sim]");
  command->add_option("--workers", options->workers, "workers (in-process and children)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  command->add_option("--sequences", options->sequences, "sequences per epoch")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  command->add_option("--batch-size", options->batch_size, "sequences per batch")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command->add_option("--sprint-ms", options->sprint_ms, "Sprint time per sequence")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command->add_option("--trainer-ms", options->trainer_ms, "trainer time per batch")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  command->callback([options, argv0 = std::move(argv0)] { run_seqtrain_bench(*options, argv0); });
}

} // namespace sprintrt::bench
