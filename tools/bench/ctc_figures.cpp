// Figure e of `sprintrt-bench all`: a CPU-bound CTC batch (the real
// full-sum criterion) through 1 and 2 sprint-sim children, the same segments
// through the criterion in this process one after the other, and PyTorch's
// ctc_loss forward + backward on the same shape (scripts/bench/torch_ctc.py).

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sim/corpus.hpp"
#include "sprintrt/pool_client.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/figure_runs.hpp"
#include "tools/bench/pool_probes.hpp"
#include "tools/bench/subprocess_json.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t ctc_frames = 150;
constexpr size_t ctc_dim = 28;
constexpr size_t ctc_labels = 40;
const std::string ctc_prefix = "bench/ctc-";

// Random labels in 1..D-1 (0 is the blank) that CTC can align in T frames:
// L plus one blank between equal neighbours.
std::vector<uint32_t> random_labels(std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label{1, static_cast<uint32_t>(ctc_dim - 1)};
  for (;;) {
    std::vector<uint32_t> labels(ctc_labels);
    size_t needed = ctc_labels;
    for (size_t i = 0; i < ctc_labels; ++i) {
      labels[i] = label(rng);
      needed += i > 0 && labels[i] == labels[i - 1];
    }
    if (needed <= ctc_frames)
      return labels;
  }
}

} // namespace

std::vector<figure> ctc_figures(figure_context& cx) {
  const size_t batch_size = cx.options.quick ? 32 : 256;
  const int runs = cx.options.quick ? 3 : 10;
  std::mt19937 rng{20240601};
  std::vector<sim::corpus_entry> entries;
  batch data;
  for (size_t b = 0; b < batch_size; ++b) {
    entries.push_back({ctc_prefix + std::to_string(b), random_labels(rng)});
    data.tags.push_back(entries.back().name);
    data.seq_lengths.push_back(static_cast<int64_t>(ctc_frames));
  }
  auto corpus = write_corpus(entries);
  data.log_posteriors = tensor::zeros({ctc_frames, batch_size, ctc_dim});
  fill_log_posteriors(data.log_posteriors.data(), ctc_frames * batch_size, ctc_dim, 7);

  // In this process: the same criterion over copies of the segments.
  auto criterion = load_criterion(corpus.path);
  std::vector<sim::row_matrix_f> segments;
  for (size_t b = 0; b < batch_size; ++b) {
    auto slice = segment_slice(data.log_posteriors, b, ctc_frames);
    segments.emplace_back(ctc_frames, ctc_dim);
    for (size_t t = 0; t < ctc_frames; ++t)
      std::copy(slice.row(t), slice.row(t) + ctc_dim, segments.back().row(t).data());
  }
  std::vector<float> expected(batch_size);
  sim::row_matrix_f error_signal(ctc_frames, ctc_dim);
  auto serial = [&] {
    for (size_t b = 0; b < batch_size; ++b) {
      auto r = criterion.loss_and_error_signal(data.tags[b], segments[b], error_signal);
      if (!r)
        throw_error("criterion", r.error());
      expected[b] = static_cast<float>(r->loss);
    }
  };

  const pool_client one{cx.live.runtime(), sim_options(cx.sprint_sim, corpus.path, 1)};
  const pool_client two{cx.live.runtime(), sim_options(cx.sprint_sim, corpus.path, 2)};
  tensor reuse[2];
  size_t mismatches = 0;
  auto through = [&](const pool_client& client, tensor& out) {
    return [&] {
      batch b{data.log_posteriors, data.seq_lengths, data.tags, std::move(out)};
      auto result = client.compute(std::move(b));
      if (!result)
        throw_error("CTC batch", result.error());
      mismatches += result->loss != expected;
      out = std::move(result->error_signal);
    };
  };
  auto run_one = through(one, reuse[0]);
  auto run_two = through(two, reuse[1]);
  serial();
  run_one(); // starts the children
  run_two();
  std::vector<double> serial_ms, one_ms, two_ms;
  for (int r = 0; r < runs; ++r) {
    time_each(1, serial_ms, serial);
    time_each(1, one_ms, run_one);
    time_each(1, two_ms, run_two);
  }
  auto in_ms = [](const std::vector<double>& us) { return scaled(spread_of(us), 1e-3); };
  const std::string shape = "B=" + std::to_string(batch_size) + ", " +
                            shape_text(ctc_frames, ctc_dim) + ", " + std::to_string(ctc_labels) +
                            " labels";
  const std::string check =
      mismatches == 0 ? "every batch's losses equal the in-process losses (bit-exact)"
                      : "WARNING: " + std::to_string(mismatches) + " batches with other losses";
  std::vector<figure> figures;

  figure speedup;
  speedup.id = "e.speedup";
  speedup.title = "CTC batch (" + shape + ", full-sum) through 2 workers";
  speedup.unit = "ms/batch";
  speedup.value = in_ms(two_ms);
  speedup.baseline_name = "the same batch through 1 worker";
  speedup.baseline = in_ms(one_ms);
  speedup.kind = ratio_kind::baseline_over_value;
  speedup.goal = {">=", 1.8, true, ">= 1.8x"};
  speedup.notes = {"pool_client::compute, error signal reused, " + std::to_string(runs) +
                       " runs rotating with the serial run and the 1-worker pool; ratio = "
                       "speedup (2 cores: 2 at most).",
                   check};
  figures.push_back(std::move(speedup));

  figure one_worker;
  one_worker.id = "e.serial";
  one_worker.title = "the CTC batch through 1 worker (child process)";
  one_worker.unit = "ms/batch";
  one_worker.value = in_ms(one_ms);
  one_worker.baseline_name = "in-process serial criterion";
  one_worker.baseline = in_ms(serial_ms);
  one_worker.notes = {"baseline = sim::criterion on the same segments in this process, one after "
                      "the other (no transport); ratio = 1 worker / serial: what the transport "
                      "and the child add on a CPU-bound batch (no target in the issue)."};
  figures.push_back(std::move(one_worker));

  const target goal{"<", 1, true, "< 1 (faster)"};
  const std::string title = "the CTC batch through 2 workers against PyTorch ctc_loss";
  const std::string baseline = "torch ctc_loss fwd+bwd, 2 threads";
  auto outcome =
      run_script(cx.options.python, "python3-torch", cx.options.scripts + "/torch_ctc.py",
                 {"--frames", std::to_string(ctc_frames), "--batch", std::to_string(batch_size),
                  "--dim", std::to_string(ctc_dim), "--labels", std::to_string(ctc_labels),
                  "--threads", "2", "--repeat", std::to_string(runs)});
  if (!outcome.skipped.empty()) {
    figures.push_back(
        skipped_figure("e.torch", title, "ms/batch", baseline, goal, outcome.skipped));
    return figures;
  }
  const auto& ms = outcome.result.at("batch_ms");
  figure torch;
  torch.id = "e.torch";
  torch.title = title;
  torch.unit = "ms/batch";
  torch.value = in_ms(two_ms);
  torch.baseline_name = baseline;
  torch.baseline = spread{ms.at("median").get<double>(), ms.at("min").get<double>(),
                          ms.at("max").get<double>(), ms.at("runs").get<int>()};
  torch.goal = goal;
  torch.details = outcome.result;
  torch.notes = {"baseline = scripts/bench/torch_ctc.py: torch.nn.functional.ctc_loss (sum) and "
                 "backward() to the log-posteriors, same shape and label count, random labels "
                 "(torch " +
                 outcome.result.value("torch", std::string{"?"}) +
                 "); ratio = sprintrt / torch (< 1: sprintrt faster)."};
  figures.push_back(std::move(torch));
  return figures;
}

} // namespace sprintrt::bench
