// `sprintrt demo`: the built-in training run, and the sequence-training
// pipeline at work. A one-hidden-layer network learns a synthetic
// speech-like task (demo_task.hpp) with the full-sum CTC loss, optionally
// fine-tuned with a sequence-discriminative criterion (MMI, boosted MMI,
// sMBR; docs/sequence-training.md) after its CTC epochs; every
// sequence's loss and error signal come from Sprint workers (`sprint-sim`
// children over the Sprint pipe protocol, as from RASR, or in-process
// simulated workers) through the sequence-training scheduler, which computes
// upcoming batches while the trainer trains on the current one
// (demo_trainer.hpp). It prints per epoch the loss, the held-out label
// error rate and how well the pipeline overlapped.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/edit_distance.hpp"
#include "process/temp_directory.hpp"
#include "sprintrt/seqtrain_client.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/demo_report.hpp"
#include "tools/sprintrt/demo_trainer.hpp"
#include "tools/sprintrt/interrupt.hpp"
#include "tools/sprintrt/output_directory.hpp"
#include "tools/sprintrt/progress_bar.hpp"
#include "tools/sprintrt/sibling_program.hpp"

namespace sprintrt::cli {

namespace {

using json = nlohmann::json;

/// Exit status of `--require-improvement` when the last epoch is no better.
constexpr int no_improvement_status = 3;

/// Stands for "not given" in `--forward-delay`.
constexpr size_t automatic = std::numeric_limits<size_t>::max();

struct demo_options {
  size_t workers = 2;
  size_t epochs = 20;
  /// full-sum (CTC throughout), mmi, bmmi or smbr.
  std::string criterion = "full-sum";
  /// With a sequence-discriminative criterion: the CTC epochs before it
  /// (default: half of `epochs`).
  size_t ctc_epochs = automatic;
  /// The criterion's denominator: `confusable` or `label-lm`.
  std::string denominator = "confusable";
  /// bmmi's boost.
  double boost = 0.5;
  /// The step size of the criterion's epochs: a third of CTC's, the best of
  /// 1.2, 0.4 and 0.1 for MMI on seed 1 (docs/sequence-training.md).
  float sequence_learning_rate = 0.4f;
  size_t segments = 1024;
  size_t heldout = 256;
  size_t batch_size = 16;
  size_t hidden = 48;
  float learning_rate = 1.2f;
  size_t forward_delay = automatic;
  uint64_t seed = 1;
  bool in_process = false;
  std::string sprint_sim;
  std::string report_dir;
  bool json_output = false;
  bool require_improvement = false;
};

/// The label error rate of greedy decoding over `segments`.
double label_error_rate(const demo_model& model, const std::vector<demo_segment>& segments) {
  size_t errors = 0;
  size_t total = 0;
  for (const auto& seg : segments) {
    errors += edit_distance(model.decode(seg.features), seg.labels);
    total += seg.labels.size();
  }
  return static_cast<double>(errors) / static_cast<double>(std::max<size_t>(total, 1));
}

/// The figures of one epoch from what training gave.
demo_epoch_figures figures_of(uint64_t epoch, const demo_epoch_result& r, double ler,
                              size_t workers) {
  demo_epoch_figures f;
  f.epoch = epoch;
  f.loss_per_frame = r.loss_sum / static_cast<double>(std::max<size_t>(r.frames, 1));
  f.label_error_rate = ler;
  f.seconds = static_cast<double>(r.elapsed_ns) / 1e9;
  double elapsed = static_cast<double>(std::max<int64_t>(r.elapsed_ns, 1));
  f.seqs_per_second = static_cast<double>(r.sequences + r.skipped) / f.seconds;
  f.trainer_wait_fraction = static_cast<double>(r.wait_ns) / elapsed;
  f.worker_utilization =
      static_cast<double>(r.stats.worker_busy_ns) / (elapsed * static_cast<double>(workers));
  f.skipped = r.skipped;
  return f;
}

json to_json(const demo_epoch_figures& f, const seqtrain_stats& stats) {
  return {{"epoch", f.epoch},
          {"loss_per_frame", f.loss_per_frame},
          {"label_error_rate", f.label_error_rate},
          {"seqs_per_second", f.seqs_per_second},
          {"trainer_wait_fraction", f.trainer_wait_fraction},
          {"worker_utilization", f.worker_utilization},
          {"seconds", f.seconds},
          {"skipped_sequences", f.skipped},
          {"sequences_computed", stats.computed},
          {"train_requests", stats.train_requests}};
}

/// The pool the scheduler sends sequences to: sprint-sim children, or
/// in-process simulated workers computing the same, with the CTC topology
/// and `criterion_args` (empty for the full-sum).
caf::expected<worker_pool_actor> make_pool(sprint_runtime& rt, const demo_options& cli,
                                           const std::string& corpus,
                                           const std::vector<std::string>& criterion_args,
                                           const std::string& name) {
  sprint_options opts;
  opts.sprint_exec_path = cli.sprint_sim.empty() ? find_sprint_sim() : cli.sprint_sim;
  opts.sprint_config = {{{word_piece::literal, "--*.corpus=" + corpus}},
                        {{word_piece::literal, "--*.topology=ctc"}}};
  for (const auto& arg : criterion_args)
    opts.sprint_config.push_back({{word_piece::literal, arg}});
  opts.num_instances = cli.workers;
  if (cli.in_process) {
    auto source = sim_worker_source(opts);
    if (!source)
      return std::move(source.error());
    return rt.pool(std::move(*source), name);
  }
  if (opts.sprint_exec_path.empty())
    return make_error(errc::invalid_options,
                      "cannot find sprint-sim next to this program; pass --sprint-sim");
  return rt.pool(opts);
}

/// sprint-sim's arguments for the sequence-discriminative criterion of
/// `cli`, its denominator file (for `confusable`) written to `scratch`.
caf::expected<std::vector<std::string>>
criterion_arguments(const demo_options& cli, const demo_task& task, const std::string& scratch) {
  std::vector<std::string> args = {"--*.criterion=" + cli.criterion};
  if (cli.denominator == "label-lm") {
    args.push_back("--*.denominator=label-lm");
  } else {
    const auto path = scratch + "/denominator.txt";
    if (auto err = write_confusable_denominator(task.train, path))
      return err;
    args.push_back("--*.denominator=" + path);
  }
  if (cli.criterion == "bmmi")
    args.push_back("--*.boost=" + std::to_string(cli.boost));
  return args;
}

int run(const demo_options& cli) {
  interrupt_guard guard;
  auto interrupted = [&guard] {
    std::cerr << "sprintrt demo: interrupted; no report written\n";
    return guard.exit_status();
  };
  demo_task_config task_config;
  task_config.train_segments = cli.segments;
  task_config.heldout_segments = cli.heldout;
  task_config.seed = cli.seed;
  auto task = make_demo_task(task_config);
  demo_model_config model_config;
  model_config.features = task_config.features;
  model_config.hidden = cli.hidden;
  model_config.classes = task.classes;
  model_config.seed = cli.seed;
  demo_model model{model_config};
  // The current batch and up to three ahead (see --forward-delay): workers
  // never run dry while the trainer trains, and the hat_y it trains on is at
  // most three updates old.
  size_t delay = cli.forward_delay == automatic ? 5 * cli.batch_size : cli.forward_delay;
  if (delay <= cli.batch_size) {
    // The scheduler refuses to train on more sequences than it admits.
    std::cerr << "sprintrt demo: --forward-delay must exceed --batch-size (" << cli.batch_size
              << ")\n";
    return 1;
  }

  auto fail = [](const caf::error& err) {
    std::cerr << "sprintrt demo: " << render(err) << "\n";
    return 1;
  };
  // Before training: a report directory we cannot write is known at once.
  if (!cli.report_dir.empty())
    if (auto err = make_output_directory(cli.report_dir))
      return fail(err);
  auto scratch = process::temp_directory::make("sprintrt-demo");
  if (!scratch)
    return fail(scratch.error());
  auto corpus = scratch->path() + "/corpus.txt";
  if (auto err = write_demo_corpus(task.train, corpus))
    return fail(err);
  const bool discriminative = cli.criterion != "full-sum";
  const size_t ctc_epochs = !discriminative               ? cli.epochs
                            : cli.ctc_epochs == automatic ? cli.epochs / 2
                                                          : cli.ctc_epochs;
  if (ctc_epochs > cli.epochs) {
    std::cerr << "sprintrt demo: --ctc-epochs (" << ctc_epochs << ") exceeds --epochs ("
              << cli.epochs << ")\n";
    return 1;
  }
  sprint_runtime rt;
  auto pool = make_pool(rt, cli, corpus, {}, "demo");
  if (!pool)
    return fail(pool.error());
  seqtrain_options sched_opts;
  sched_opts.forward_seq_delay = delay;
  sched_opts.record_timeline = !cli.report_dir.empty();
  seqtrain_client scheduler{rt, *pool, sched_opts};
  // The sequence-discriminative criterion's own pool and scheduler, made
  // before training so that a bad denominator fails at once.
  std::unique_ptr<seqtrain_client> fine_tuning;
  if (discriminative) {
    auto args = criterion_arguments(cli, task, scratch->path());
    if (!args)
      return fail(args.error());
    auto criterion_pool = make_pool(rt, cli, corpus, *args, "demo-" + cli.criterion);
    if (!criterion_pool)
      return fail(criterion_pool.error());
    fine_tuning = std::make_unique<seqtrain_client>(rt, *criterion_pool, sched_opts);
  }
  demo_trainer trainer{model,    task.train,   scheduler, cli.batch_size, cli.learning_rate,
                       cli.seed, guard.token()};

  bool one = cli.workers == 1;
  std::string workers =
      std::to_string(cli.workers) +
      (cli.in_process ? (one ? " in-process simulated worker" : " in-process simulated workers")
                      : (one ? " sprint-sim child" : " sprint-sim children"));
  json report{{"task",
               {{"train_utterances", task.train.size()},
                {"heldout_utterances", task.heldout.size()},
                {"labels", task_config.labels},
                {"features", task_config.features},
                {"seed", cli.seed}}},
              {"model",
               {{"hidden_units", cli.hidden},
                {"context_frames", 2 * model_config.context + 1},
                {"learning_rate", cli.learning_rate},
                {"sequence_learning_rate", cli.sequence_learning_rate},
                {"batch_size", cli.batch_size}}},
              {"criterion", cli.criterion},
              {"ctc_epochs", ctc_epochs},
              {"denominator", discriminative ? json(cli.denominator) : json(nullptr)},
              {"workers", cli.workers},
              {"in_process", cli.in_process},
              {"forward_delay", delay},
              {"epochs", json::array()}};
  if (!cli.json_output) {
    if (discriminative)
      std::printf("sprintrt demo: %zu CTC epochs, then %zu of %s over the %s denominator.\n",
                  ctc_epochs, cli.epochs - ctc_epochs, cli.criterion.c_str(),
                  cli.denominator.c_str());
    std::printf("sprintrt demo: CTC training of a network with one hidden layer (%zu tanh units "
                "over %zu frames of %zu features; %u labels + blank)\non %zu synthetic "
                "utterances, label error rate (LER) of greedy decoding on %zu held-out ones.\n"
                "Losses from %s through the sequence-training scheduler,\nforward delay %zu "
                "sequences (batches of %zu).\n",
                cli.hidden, 2 * model_config.context + 1, task_config.features, task_config.labels,
                task.train.size(), task.heldout.size(), workers.c_str(), delay, cli.batch_size);
    std::fflush(stdout);
  }
  std::vector<demo_epoch_figures> figures;
  demo_timeline timeline;
  double total_seconds = 0;
  {
    // One bar for the whole run; each epoch's line replaces it for a moment
    // (a bar per epoch would leave a line of its own behind every epoch).
    progress_bar bar{"training", cli.epochs * task.train.size(), "utterances", 0};
    for (size_t epoch = 1; epoch <= cli.epochs; ++epoch) {
      if (epoch == ctc_epochs + 1 && fine_tuning)
        trainer.use_scheduler(*fine_tuning, cli.sequence_learning_rate);
      const std::string criterion = epoch <= ctc_epochs ? "ctc" : cli.criterion;
      size_t before = (epoch - 1) * task.train.size();
      auto result =
          trainer.run_epoch(epoch, [&bar, before](size_t done) { bar.update(before + done); });
      if (guard.interrupted())
        return interrupted();
      if (!result)
        return fail(result.error());
      auto f = figures_of(epoch, *result, label_error_rate(model, task.heldout), cli.workers);
      total_seconds += f.seconds;
      figures.push_back(f);
      report["epochs"].push_back(to_json(f, result->stats));
      report["epochs"].back()["criterion"] = criterion;
      // The last epoch's timeline: child start-up is long over by then.
      timeline = {epoch, result->elapsed_ns, cli.workers, std::move(result->trainer),
                  std::move(result->stats.timeline)};
      if (!cli.json_output) {
        if (bar.enabled())
          std::fputs("\r\033[K", stderr); // clears the bar's line
        std::printf("epoch %2zu%s: loss/frame %.4f  held-out LER %5.1f%%  %5.0f seq/s  trainer "
                    "waits %3.0f%%  workers busy %3.0f%%  %.2f s\n",
                    epoch, discriminative ? (" [" + criterion + "]").c_str() : "", f.loss_per_frame,
                    100 * f.label_error_rate, f.seqs_per_second, 100 * f.trainer_wait_fraction,
                    100 * f.worker_utilization, f.seconds);
        std::fflush(stdout);
      }
    }
    bar.finish();
    bar.end_line();
  }
  if (guard.interrupted())
    return interrupted();
  report["seconds"] = total_seconds;
  const auto& first = figures.front();
  const auto& last = figures.back();
  // Losses of different criteria are not comparable: the loss against the
  // first epoch of the last epoch's criterion, the error rate against the
  // first epoch's.
  const auto& first_of_last = figures[last.epoch > ctc_epochs ? ctc_epochs : 0];
  bool improved = last.loss_per_frame < first_of_last.loss_per_frame &&
                  last.label_error_rate < first.label_error_rate;
  report["improved"] = improved;
  if (!cli.report_dir.empty()) {
    auto err = write_demo_report(cli.report_dir, report.dump(2) + "\n", figures, timeline);
    if (guard.interrupted()) {
      remove_outputs({cli.report_dir + "/report.json", cli.report_dir + "/learning_curves.svg",
                      cli.report_dir + "/timeline.svg"});
      return interrupted();
    }
    if (err)
      return fail(err);
  }
  if (cli.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::printf("loss per frame %.4f -> %.4f, held-out LER %.1f%% -> %.1f%% in %zu epochs, "
                "%.1f s.\n",
                first.loss_per_frame, last.loss_per_frame, 100 * first.label_error_rate,
                100 * last.label_error_rate, cli.epochs, total_seconds);
    if (!cli.report_dir.empty())
      std::printf("report: %s/{report.json,learning_curves.svg,timeline.svg}\n",
                  cli.report_dir.c_str());
  }
  if (cli.require_improvement && !improved) {
    std::cerr << "sprintrt demo: the last epoch's loss and label error rate are not both below "
                 "the first's\n";
    return no_improvement_status;
  }
  return 0;
}

} // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<demo_options>();
  auto* cmd = app.add_subcommand(
      "demo", "Train a small CTC model through the sequence-training scheduler with losses from "
              "sprint-sim workers (the built-in example)");
  cmd->add_option("--workers", opts->workers, "Sprint workers (numInstances)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--criterion", opts->criterion,
                  "full-sum: CTC throughout; mmi, bmmi, smbr: CTC for --ctc-epochs, then "
                  "this sequence-discriminative criterion")
      ->check(CLI::IsMember({"full-sum", "mmi", "bmmi", "smbr"}))
      ->capture_default_str();
  cmd->add_option("--ctc-epochs", opts->ctc_epochs,
                  "With --criterion mmi, bmmi or smbr: the CTC epochs before it (default: half "
                  "of --epochs)");
  cmd->add_option("--denominator", opts->denominator,
                  "The criterion's competing hypotheses: confusable (each reference with one "
                  "label swapped for its confusable partner) or label-lm (every label sequence "
                  "under the corpus' label bigram)")
      ->check(CLI::IsMember({"confusable", "label-lm"}))
      ->capture_default_str();
  cmd->add_option("--sequence-learning-rate", opts->sequence_learning_rate,
                  "The SGD step size of the criterion's epochs")
      ->capture_default_str();
  cmd->add_option("--boost", opts->boost, "bmmi's boost B")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--in-process", opts->in_process,
                "Use in-process simulated workers instead of sprint-sim children");
  cmd->add_option("--epochs", opts->epochs, "Passes over the training utterances")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--segments", opts->segments, "Training utterances")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--heldout", opts->heldout, "Held-out utterances for the label error rate")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--batch-size", opts->batch_size, "Utterances per batch")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--hidden", opts->hidden, "Hidden units")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--learning-rate", opts->learning_rate, "SGD step size")->capture_default_str();
  cmd->add_option("--forward-delay", opts->forward_delay,
                  "The scheduler's forward_seq_delay in sequences (default: 5 x batch size, "
                  "which keeps the current batch and up to three ahead; batch size + 1: no "
                  "look-ahead)");
  cmd->add_option("--seed", opts->seed, "Random seed of task, model and order")
      ->capture_default_str();
  cmd->add_option("--sprint-sim", opts->sprint_sim, "The sprint-sim executable (found by default)");
  cmd->add_flag("--json", opts->json_output, "Print a JSON report instead of lines");
  cmd->add_option("--report", opts->report_dir,
                  "Write report.json, learning_curves.svg and timeline.svg into this directory");
  cmd->add_flag("--require-improvement", opts->require_improvement,
                "Exit with status 3 unless the last epoch's loss and held-out label error rate "
                "are below the first's");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
