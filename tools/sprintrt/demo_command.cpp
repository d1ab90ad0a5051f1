// `sprintrt demo`: the built-in training run. A linear softmax model learns a
// synthetic task with the full-sum CTC loss; every batch's loss and error
// signal come from a pool of real `sprint-sim` children over the Sprint pipe
// protocol, exactly as a trainer would get them from RASR. It shows the loss
// falling and the label error rate of greedy decoding with it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "common/edit_distance.hpp"
#include "runtime/temp_directory.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tools/sprintrt/commands.hpp"
#include "tools/sprintrt/demo_task.hpp"
#include "tools/sprintrt/progress_bar.hpp"

namespace sprintrt::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using clock = std::chrono::steady_clock;

struct demo_options {
  size_t workers = 2;
  size_t epochs = 20;
  size_t segments = 256;
  size_t batch_size = 16;
  float learning_rate = 4.0f;
  uint64_t seed = 1;
  std::string sprint_sim;
  bool json_output = false;
};

/// Finds sprint-sim: next to this executable (an installation) or in the
/// build tree's tools/sprint-sim.
std::string find_sprint_sim() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  for (auto candidate : {self.parent_path() / "sprint-sim",
                         self.parent_path().parent_path() / "sprint-sim" / "sprint-sim"})
    if (fs::exists(candidate, ec))
      return candidate.string();
  return {};
}

/// The label error rate of greedy decoding over all segments.
double label_error_rate(const demo_model& model, const std::vector<demo_segment>& segments) {
  size_t errors = 0;
  size_t total = 0;
  for (const auto& seg : segments) {
    errors += edit_distance(model.decode(seg), seg.labels);
    total += seg.labels.size();
  }
  return static_cast<double>(errors) / static_cast<double>(total);
}

/// Builds the [T, B, D] batch of the model's log-posteriors for `members`.
batch make_batch(const demo_model& model, const std::vector<demo_segment>& segments,
                 const std::vector<size_t>& members, size_t classes, tensor reuse) {
  size_t frames = 0;
  for (auto i : members)
    frames = std::max(frames, static_cast<size_t>(segments[i].features.rows()));
  batch b;
  b.log_posteriors = tensor::zeros({frames, members.size(), classes});
  for (size_t j = 0; j < members.size(); ++j) {
    const auto& seg = segments[members[j]];
    auto length = static_cast<size_t>(seg.features.rows());
    model.log_posteriors(seg, segment_slice(b.log_posteriors, j, length));
    b.seq_lengths.push_back(static_cast<int64_t>(length));
    b.tags.push_back(seg.name);
  }
  b.reuse_error_signal = std::move(reuse);
  return b;
}

int run(const demo_options& cli) {
  auto sprint_sim = cli.sprint_sim.empty() ? find_sprint_sim() : cli.sprint_sim;
  if (sprint_sim.empty()) {
    std::cerr << "sprintrt demo: cannot find sprint-sim next to this program; pass --sprint-sim\n";
    return 1;
  }
  demo_task_config task;
  task.segments = cli.segments;
  task.seed = cli.seed;
  auto segments = make_demo_task(task);
  size_t classes = task.labels + 1;
  auto scratch = runtime::temp_directory::make("sprintrt-demo");
  if (!scratch) {
    std::cerr << "sprintrt demo: " << render(scratch.error()) << "\n";
    return 1;
  }
  auto corpus = scratch->path() + "/corpus.txt";
  if (auto err = write_demo_corpus(segments, corpus)) {
    std::cerr << "sprintrt demo: " << render(err) << "\n";
    return 1;
  }

  sprint_options opts;
  opts.sprint_exec_path = sprint_sim;
  opts.sprint_config = {{{word_piece::literal, "--*.corpus=" + corpus}},
                        {{word_piece::literal, "--*.topology=ctc"}}};
  opts.num_instances = cli.workers;
  sprint_runtime rt;
  pool_client client{rt, opts};
  demo_model model{task.features, classes};

  json report{{"segments", segments.size()},
              {"labels", task.labels},
              {"features", task.features},
              {"workers", cli.workers},
              {"epochs", json::array()}};
  double initial_ler = label_error_rate(model, segments);
  if (!cli.json_output) {
    std::cout << "sprintrt demo: CTC training of a linear softmax model on " << segments.size()
              << " synthetic segments (" << task.labels << " labels + blank, " << task.features
              << " features);\nloss and error signal from " << cli.workers
              << " sprint-sim worker(s) over the Sprint pipe protocol.\n"
              << "before training: label error rate " << 100.0 * initial_ler << "%\n";
  }
  std::mt19937_64 gen{cli.seed};
  std::vector<size_t> order(segments.size());
  std::iota(order.begin(), order.end(), size_t{0});
  tensor spare;
  double first_loss = NAN;
  double last_loss = NAN;
  for (size_t epoch = 1; epoch <= cli.epochs; ++epoch) {
    auto start = clock::now();
    std::shuffle(order.begin(), order.end(), gen);
    progress_bar bar{"epoch " + std::to_string(epoch), segments.size(), "segments", 0};
    double loss_sum = 0;
    size_t frames = 0;
    size_t skipped = 0;
    for (size_t first = 0; first < order.size(); first += cli.batch_size) {
      std::vector<size_t> members(
          order.begin() + static_cast<ptrdiff_t>(first),
          order.begin() + static_cast<ptrdiff_t>(std::min(order.size(), first + cli.batch_size)));
      auto result = client.compute(make_batch(model, segments, members, classes, std::move(spare)));
      if (!result) {
        std::cerr << "sprintrt demo: " << render(result.error()) << "\n";
        return 1;
      }
      size_t batch_frames = 0;
      for (size_t j = 0; j < members.size(); ++j) {
        const auto& seg = segments[members[j]];
        auto length = static_cast<size_t>(seg.features.rows());
        if (std::isinf(result->loss[j])) {
          ++skipped; // Sprint skipped it: no path; its error signal is zero
          continue;
        }
        loss_sum += result->loss[j];
        batch_frames += length;
        model.accumulate(seg, segment_slice(result->error_signal, j, length));
      }
      frames += batch_frames;
      model.step(cli.learning_rate, batch_frames);
      spare = std::move(result->error_signal);
      bar.update(first + members.size());
    }
    double seconds = std::chrono::duration<double>(clock::now() - start).count();
    double loss = loss_sum / static_cast<double>(std::max<size_t>(frames, 1));
    double ler = label_error_rate(model, segments);
    if (epoch == 1)
      first_loss = loss;
    last_loss = loss;
    report["epochs"].push_back({{"epoch", epoch},
                                {"loss_per_frame", loss},
                                {"label_error_rate", ler},
                                {"skipped_segments", skipped},
                                {"seconds", seconds}});
    if (!cli.json_output) {
      std::printf("epoch %2zu: loss per frame %.4f, label error rate %5.1f%%, %.2f s\n", epoch,
                  loss, 100.0 * ler, seconds);
      std::fflush(stdout);
    }
  }
  auto stats = client.stats();
  if (stats) {
    report["segments_computed"] = stats->segments;
    report["restarts"] = 0;
    for (const auto& w : stats->workers)
      report["restarts"] = report["restarts"].get<uint32_t>() + w.restarts;
  }
  if (cli.json_output) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::printf("loss per frame %.4f -> %.4f over %zu epochs; %llu segment losses computed by the "
                "workers.\n",
                first_loss, last_loss, cli.epochs,
                static_cast<unsigned long long>(stats ? stats->segments : 0));
  }
  return 0;
}

} // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<demo_options>();
  auto* cmd = app.add_subcommand(
      "demo", "Train a small CTC model with losses from sprint-sim workers (the built-in example)");
  cmd->add_option("--workers", opts->workers, "Sprint children (numInstances)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--epochs", opts->epochs, "Passes over the data")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--segments", opts->segments, "Synthetic segments")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--batch-size", opts->batch_size, "Segments per batch")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--learning-rate", opts->learning_rate, "SGD step size")->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Random seed of data and order")->capture_default_str();
  cmd->add_option("--sprint-sim", opts->sprint_sim, "The sprint-sim executable (found by default)");
  cmd->add_flag("--json", opts->json_output, "Print a JSON report instead of lines");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

} // namespace sprintrt::cli
