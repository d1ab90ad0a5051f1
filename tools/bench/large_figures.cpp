// Figure d of `sprintrt-bench all`: a batch of large segments (48 MB each
// way) through one sprint-sim child against the store-and-forward echo of
// the same bytes, the minor page faults of steady-state requests, and the
// parent's peak RSS for one batch, measured in a fresh process
// (`sprintrt-bench large-rss`).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sim/corpus.hpp"
#include "sim/criterion.hpp"
#include "sprintrt/pool_client.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/figure_runs.hpp"
#include "tools/bench/pool_probes.hpp"
#include "tools/bench/subprocess_json.hpp"

namespace sprintrt::bench {

namespace {

const std::string large_prefix = "bench/large-";
constexpr double page_bytes = 4096;
constexpr double megabyte = 1 << 20;

struct large_shape {
  size_t frames;
  size_t dim;
  size_t batch;
  /// Timed batches (each also one echo block).
  int runs;
  /// Fresh processes for the peak RSS.
  int rss_runs;
};

large_shape shape_of(bool quick) {
  return quick ? large_shape{200, 2001, 2, 3, 1} : large_shape{1000, 12001, 8, 5, 3};
}

std::vector<sim::corpus_entry> large_corpus(size_t batch) {
  std::vector<sim::corpus_entry> entries;
  for (size_t b = 0; b < batch; ++b)
    entries.push_back({large_prefix + std::to_string(b), {1, 2, 3}});
  return entries;
}

// A [T, B, D] batch whose segments all hold the same random log-posteriors
// (drawn once for [T, D]: cheaper than T x B rows of exp).
batch large_batch(const large_shape& s) {
  batch b;
  std::vector<float> segment(s.frames * s.dim);
  fill_log_posteriors(segment.data(), s.frames, s.dim, 5);
  b.log_posteriors = tensor::zeros({s.frames, s.batch, s.dim});
  for (size_t t = 0; t < s.frames; ++t)
    for (size_t i = 0; i < s.batch; ++i)
      std::copy(segment.begin() + static_cast<ptrdiff_t>(t * s.dim),
                segment.begin() + static_cast<ptrdiff_t>((t + 1) * s.dim),
                b.log_posteriors.data() + (t * s.batch + i) * s.dim);
  for (size_t i = 0; i < s.batch; ++i) {
    b.seq_lengths.push_back(static_cast<int64_t>(s.frames));
    b.tags.push_back(large_prefix + std::to_string(i));
  }
  return b;
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); 0 if absent.
double status_kb(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      std::istringstream value{line.substr(field.size() + 1)};
      double kb = 0;
      value >> kb;
      return kb;
    }
  return 0;
}

struct rss_options {
  std::string sprint_sim;
  size_t frames = 0;
  size_t dim = 0;
  size_t batch = 0;
};

// `large-rss`: one batch in this fresh process; prints its peak RSS
// increase over the RSS before the batch's input was allocated.
void run_large_rss(const rss_options& o, const std::string& argv0) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("sprintrt-bench"));
  spdlog::set_level(spdlog::level::warn);
  const large_shape s{o.frames, o.dim, o.batch, 1, 1};
  auto corpus = write_corpus(large_corpus(s.batch));
  const auto sprint_sim = find_sprint_sim(o.sprint_sim, argv0);
  nlohmann::json result;
  {
    sprint_runtime rt;
    const pool_client client{rt, sim_options(sprint_sim, corpus.path, 1, {zero_criterion})};
    // Starts the child with a one-frame segment: what the batch adds is
    // measured, not the runtime's and the child's start.
    facade_request(client, make_job(large_prefix + "0", 1, s.dim, 1));
    // Linux >= 4.0: "5" resets VmHWM to the current RSS.
    bool reset = false;
    {
      std::ofstream clear{"/proc/self/clear_refs"};
      clear << "5" << std::flush;
      reset = static_cast<bool>(clear);
    }
    const double base_kb = status_kb("VmRSS");
    const double hwm_before_kb = status_kb("VmHWM");
    {
      auto b = large_batch(s);
      auto out = client.compute(std::move(b));
      if (!out)
        throw_error("large batch", out.error());
    }
    const double peak_kb = status_kb("VmHWM");
    const double tensors = 2.0 * static_cast<double>(s.frames * s.batch * s.dim) * sizeof(float);
    result = {{"base_rss_mb", base_kb / 1024},
              {"peak_rss_mb", peak_kb / 1024},
              {"increase_mb", (peak_kb - base_kb) / 1024},
              {"tensor_mb", tensors / megabyte},
              {"hwm_reset", reset && hwm_before_kb <= base_kb + 1024}};
  }
  std::cout << result.dump() << std::endl;
}

} // namespace

std::vector<figure> large_figures(figure_context& cx) {
  const auto s = shape_of(cx.options.quick);
  auto corpus = write_corpus(large_corpus(s.batch));
  const pool_client client{cx.live.runtime(),
                           sim_options(cx.sprint_sim, corpus.path, 1, {zero_criterion})};
  const size_t request = request_bytes(large_prefix + "0", s.frames, s.dim);
  const size_t reply = reply_bytes(s.frames, s.dim);
  const batch data = large_batch(s);
  tensor reuse;
  auto run_batch = [&] {
    batch b{data.log_posteriors, data.seq_lengths, data.tags, std::move(reuse)};
    auto result = client.compute(std::move(b));
    if (!result)
      throw_error("large batch", result.error());
    reuse = std::move(result->error_signal);
  };
  auto run_echo = [&] {
    for (size_t i = 0; i < s.batch; ++i)
      cx.sf_echo.round_trip(request - 4, reply - 4);
  };
  // Warm-up: the child's and the worker's buffers grow to the message size,
  // the output is allocated once and reused after.
  auto start = std::chrono::steady_clock::now();
  run_batch();
  const double first_ms = micros_since(start) / 1e3;
  run_batch();
  run_echo();
  auto stats = client.stats();
  if (!stats || stats->workers.empty())
    throw std::runtime_error("the pool reports no worker");
  const int child = stats->workers[0].pid;
  // What the child does per request, in this process: unpickle the
  // request, check the posteriors (criterion=zero still does), write zeros,
  // encode the reply.
  child_probe probe{corpus.path, make_job(large_prefix + "0", s.frames, s.dim, 5),
                    sim::criterion_kind::zero};
  std::vector<double> sprintrt, echo, child_work, parent_faults, child_faults;
  const auto per = static_cast<double>(s.batch);
  for (int r = 0; r < s.runs; ++r) {
    const uint64_t parent_before = minor_faults();
    const uint64_t child_before = minor_faults(child);
    time_each(1, sprintrt, run_batch);
    parent_faults.push_back(static_cast<double>(minor_faults() - parent_before) / per);
    child_faults.push_back(static_cast<double>(minor_faults(child) - child_before) / per);
    time_each(1, echo, run_echo);
    time_each(1, child_work, [&] { probe.serve(); });
  }
  const spread ms = scaled(spread_of(sprintrt), 1e-3 / per);
  const spread echo_ms = scaled(spread_of(echo), 1e-3 / per);
  const double child_ms = spread_of(child_work).median / 1e3;
  const double without_child = ms.median - child_ms;
  const double bytes = static_cast<double>(request + reply);
  const double pages = std::ceil(static_cast<double>(request) / page_bytes) +
                       std::ceil(static_cast<double>(reply) / page_bytes);
  const std::string shape = shape_text(s.frames, s.dim) + ", B=" + std::to_string(s.batch);
  std::vector<figure> figures;

  figure transport;
  transport.id = "d.transport";
  transport.title = "large segments (" + shape + ", criterion=zero) through 1 worker, per segment";
  transport.unit = "ms/segment";
  transport.value = ms;
  transport.baseline_name = "store-and-forward pipe echo";
  transport.baseline = echo_ms;
  transport.kind = ratio_kind::baseline_over_value;
  transport.ratio_suffix = " of the limit";
  transport.goal = {">=", 0.9, true, ">= 0.9 of the echo"};
  transport.details = {{"request_bytes", request},
                       {"reply_bytes", reply},
                       {"mb_per_s", megabytes_per_second(bytes, ms.median * 1e3)},
                       {"echo_mb_per_s", megabytes_per_second(bytes, echo_ms.median * 1e3)},
                       {"first_batch_ms", first_ms},
                       {"child_work_ms", child_ms},
                       {"fraction_of_limit_without_child_work", echo_ms.median / without_child}};
  transport.notes = {
      "pool_client::compute of a batch of " + std::to_string(s.batch) + " segments of " +
          format_fixed(static_cast<double>(request) / 1e6, 1) +
          " MB each way (error signal "
          "reused); one sample per batch = batch time / B; ratio = echo / sprintrt, the fraction "
          "of the pipe limit reached (1 = the limit).",
      "throughput: " + format_fixed(megabytes_per_second(bytes, ms.median * 1e3), 0) +
          " MB/s against the echo's " +
          format_fixed(megabytes_per_second(bytes, echo_ms.median * 1e3), 0) +
          " MB/s (request + reply bytes); the first batch (fresh buffers, untimed above) took " +
          format_fixed(first_ms, 1) + " ms.",
      "the child's own work per request, in this process (sim::sprint_service, "
      "criterion=zero: unpickle, posterior checks, zeros, reply encode): " +
          format_fixed(child_ms, 1) + " ms; without it the parent and the pipes take " +
          format_fixed(without_child, 1) + " ms per segment, " +
          format_fixed(echo_ms.median / without_child, 2) + " of the limit."};
  figures.push_back(std::move(transport));

  auto faults = [&](std::string id, std::string who, const std::vector<double>& samples) {
    figure f;
    f.id = std::move(id);
    f.title = "minor page faults per steady-state large request, " + who;
    f.unit = "faults/request";
    f.value = spread_of(samples);
    f.baseline_name = "4 KiB pages of request + reply";
    f.baseline = spread{pages, pages, pages, 1};
    f.goal = {"<=", 0, false, "0"};
    f.notes = {"counted from /proc/" + std::string{f.id == "d.faults_parent" ? "self" : "PID"} +
               "/stat over each timed batch / B; the target applies to the median, ratio = "
               "faults / pages moved."};
    return f;
  };
  figures.push_back(faults("d.faults_parent", "parent", parent_faults));
  figures.push_back(faults("d.faults_child", "child (sprint-sim)", child_faults));

  figure rss;
  rss.id = "d.peak_rss";
  rss.title = "parent's peak RSS increase for one large batch (" + shape + "), fresh process";
  rss.unit = "MB";
  rss.baseline_name = "input + output tensors";
  rss.goal = {"<=", 2.5, true, "<= 2.5x"};
  std::vector<double> increases;
  double tensor_mb = 0;
  bool reset = true;
  for (int r = 0; r < s.rss_runs; ++r) {
    auto document =
        json_of(run_program({cx.self, "large-rss", "--sprint-sim", cx.sprint_sim, "--frames",
                             std::to_string(s.frames), "--dim", std::to_string(s.dim), "--batch",
                             std::to_string(s.batch)}),
                "sprintrt-bench large-rss");
    increases.push_back(document.at("increase_mb").get<double>());
    tensor_mb = document.at("tensor_mb").get<double>();
    reset = reset && document.at("hwm_reset").get<bool>();
    rss.details = document;
  }
  rss.value = spread_of(increases);
  rss.baseline = spread{tensor_mb, tensor_mb, tensor_mb, 1};
  rss.notes = {"`sprintrt-bench large-rss` in a fresh process per run (" +
               std::to_string(s.rss_runs) +
               "): VmHWM after the batch minus VmRSS once the runtime and the child are up, "
               "before the input is allocated; the output is allocated by the batch (no reuse)." +
               (reset ? "" : " WARNING: VmHWM could not be reset (/proc/self/clear_refs).")};
  figures.push_back(std::move(rss));
  return figures;
}

void add_large_rss_command(CLI::App& app, std::string argv0) {
  auto options = std::make_shared<rss_options>();
  auto* command = app.add_subcommand(
      "large-rss", "one large batch in this process; prints its peak RSS increase (JSON)");
  command->group(""); // hidden: `all` runs it
  command->add_option("--sprint-sim", options->sprint_sim, "the sprint-sim executable");
  command->add_option("--frames", options->frames)->required()->check(CLI::PositiveNumber);
  command->add_option("--dim", options->dim)->required()->check(CLI::PositiveNumber);
  command->add_option("--batch", options->batch)->required()->check(CLI::PositiveNumber);
  command->callback([options, argv0 = std::move(argv0)] { run_large_rss(*options, argv0); });
}

} // namespace sprintrt::bench
