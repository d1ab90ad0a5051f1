#include "tools/bench/pool_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sim/criterion.hpp"
#include "sprintrt/pool_client.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/pipe_echo.hpp"
#include "tools/bench/pool_probes.hpp"
#include "tools/bench/pool_setup.hpp"

namespace sprintrt::bench {

namespace {

using clock = std::chrono::steady_clock;

const std::string small_segment = "bench/small";
const std::string large_segment = "bench/large";
constexpr size_t batch_segments = 32;
constexpr size_t batch_frames = 300;
constexpr size_t batch_dim = 50;
const size_t instance_counts[] = {1, 2, 4};

struct pool_bench_options {
  bench_options common;
  std::string sprint_sim;
  int requests = 200;
  /// The sections to run (all if empty): small, large, batch.
  std::vector<std::string> only;

  bool runs(const std::string& name) const {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  }
};

/// Everything the three measurements share.
struct context {
  const pool_bench_options& options;
  std::string corpus;
  sprint_options opts;
  bench_runtime& live;
  pipe_echo& echo;
  pipe_echo& sf_echo;
};

std::string loss_note(double child, double in_process) {
  return child == in_process ? "loss from the child equals the in-process loss (bit-exact)"
                             : "WARNING: loss from the child " + std::to_string(child) +
                                   " differs from the in-process " + std::to_string(in_process);
}

section small_segments(context& cx) {
  const int runs = cx.options.common.repeat;
  const auto k = static_cast<size_t>(cx.options.requests);
  auto job = make_job(small_segment, 3, 4, 1);
  child_probe child{cx.corpus, job};
  const double child_loss = child.compute();
  const size_t echo_payload = (child.request_bytes() + child.reply_bytes()) / 2 - 4;
  auto& system = cx.live.runtime().system();
  const auto& worker = cx.live.spawn_worker(cx.opts);
  const pool_client client{cx.live.runtime(), cx.opts};
  caf::scoped_actor self{system};
  // Warm-up: starts both children, fills caches and free lists.
  const double loss = facade_request(client, job);
  for (int i = 0; i < 50; ++i) {
    cx.echo.round_trip(echo_payload);
    cx.sf_echo.round_trip(echo_payload);
    scoped_request(self, worker, job);
    facade_request(client, job);
  }
  event_based_requests(system, worker, job, 50);
  std::vector<double> echo, sf_echo, compute, service, event, scoped, facade;
  // Blocks of a few requests per path, rotating, so that the load of the
  // moment (this machine is shared) hits every path alike.
  const size_t block = std::min<size_t>(k, 10);
  worker_stats event_stats;
  for (int r = 0; r < runs; ++r)
    for (size_t done = 0; done < k; done += block) {
      const size_t n = std::min(block, k - done);
      time_each(n, echo, [&] { cx.echo.round_trip(echo_payload); });
      time_each(n, sf_echo, [&] { cx.sf_echo.round_trip(echo_payload); });
      time_each(n, compute, [&] { child.compute(); });
      time_each(n, service, [&] { child.serve(); });
      const auto before = stats_of(self, worker);
      auto chain = event_based_requests(system, worker, job, n);
      const auto after = stats_of(self, worker);
      event_stats.requests_served += after.requests_served - before.requests_served;
      event_stats.busy_ns += after.busy_ns - before.busy_ns;
      event.insert(event.end(), chain.begin(), chain.end());
      time_each(n, scoped, [&] { scoped_request(self, worker, job); });
      time_each(n, facade, [&] { facade_request(client, job); });
    }
  const double busy = busy_us({}, event_stats);
  const auto base = summarize(echo);
  const auto work = summarize(service);
  double event_mean = 0;
  for (double x : event)
    event_mean += x / static_cast<double>(event.size());
  auto row = [&](const std::string& path, const timing& t, bool through_child) {
    return nlohmann::json{
        {"path", path},
        {"median_us", t.median_us},
        {"min_us", t.min_us},
        {"ratio", t.median_us / base.median_us},
        {"ratio_min", t.min_us / base.min_us},
        {"excess_us", through_child ? nlohmann::json(t.median_us - base.median_us - work.median_us)
                                    : nlohmann::json("-")},
        {"target", "-"}};
  };
  // The target for the facade (figure b of `sprintrt-bench all`).
  constexpr double facade_target = 3.0;
  auto facade_row = row("pool_client::compute_segment (facade)", summarize(facade), true);
  facade_row["target"] = "<= " + format_fixed(facade_target, 0) + "x: " +
                         (facade_row["ratio"].get<double>() <= facade_target ? "met" : "missed");
  return {"small",
          "pool (a): one segment T=3, D=4 (CTC, 1 label), per request, median of " +
              std::to_string(runs) + " x " + std::to_string(k) +
              " requests (paths rotating in blocks of 10); baseline = raw pipe echo through "
              "/bin/cat",
          {{"path", "path", 44},
           {"median_us", "median_us", 11},
           {"min_us", "min_us", 10},
           {"ratio", "ratio", 8},
           {"ratio_min", "ratio_min", 11},
           {"excess_us", "excess_us", 11},
           {"target", "target", 16}},
          {row("raw pipe echo (/bin/cat, " + std::to_string(echo_payload + 4) + " B each way)",
               base, false),
           row("raw pipe echo, store-and-forward (fork)", summarize(sf_echo), false),
           row("in-process: sim::criterion only", summarize(compute), false),
           row("in-process: child work (unpickle+sim+encode)", work, false),
           row("worker actor, event-based request", summarize(event), true),
           row("worker actor, scoped_actor request", summarize(scoped), true), facade_row},
          {"ratio = median / raw pipe echo median, ratio_min = min / echo min (steadier on a busy "
           "machine); 1.0 = pipe limit; target: the issue's bound on the facade's ratio. excess = "
           "median - echo - in-process "
           "child work: what the path adds to a raw round trip and the child's own work (encode, "
           "decode, io-thread and actor hand-offs, wake-ups).",
           "message sizes: request " + std::to_string(child.request_bytes()) + " B, reply " +
               std::to_string(child.reply_bytes()) +
               " B (framed); the echo moves their mean each way.",
           "the worker rows go straight to a worker actor (own io thread); the facade adds a "
           "scoped_actor per call and the pool actor's hop.",
           "worker busy per event-based request (its own count: request handed to the io thread "
           "-> reply decoded): mean " +
               format_fixed(busy, 1) + " us of the requests' mean " + format_fixed(event_mean, 1) +
               " us; the rest is encode, copy and the requester <-> worker hops.",
           loss_note(loss, child_loss)}};
}

section large_segments(context& cx) {
  const int runs = cx.options.common.repeat;
  auto job = make_job(large_segment, 500, 20000, 2);
  child_probe child{cx.corpus, job};
  const double child_loss = child.compute();
  const size_t echo_payload = (child.request_bytes() + child.reply_bytes()) / 2 - 4;
  const double bytes = static_cast<double>(child.request_bytes() + child.reply_bytes());
  const pool_client client{cx.live.runtime(), cx.opts};
  // A small request first starts the child (if the small case did not): the
  // first large call pays for fresh 40 MB buffers on both sides of the
  // pipes, not for the child start.
  facade_request(client, make_job(small_segment, 3, 4, 1));
  auto start = clock::now();
  const double loss = facade_request(client, job);
  const double first_us = micros_since(start);
  cx.echo.round_trip(echo_payload);
  cx.sf_echo.round_trip(echo_payload);
  facade_request(client, job);
  auto pool_worker = [&client] {
    auto stats = client.stats();
    if (!stats || stats->workers.empty())
      throw std::runtime_error("the pool reports no worker");
    return stats->workers[0];
  };
  const auto stats_before = pool_worker();
  std::vector<double> echo, sf_echo, compute, service, facade;
  uint64_t parent_faults = 0;
  uint64_t child_faults = 0;
  for (int r = 0; r < runs; ++r) {
    time_each(1, echo, [&] { cx.echo.round_trip(echo_payload); });
    time_each(1, sf_echo, [&] { cx.sf_echo.round_trip(echo_payload); });
    time_each(1, compute, [&] { child.compute(); });
    time_each(1, service, [&] { child.serve(); });
    const uint64_t parent_before = minor_faults();
    const uint64_t child_before = minor_faults(stats_before.pid);
    time_each(1, facade, [&] { facade_request(client, job); });
    parent_faults += minor_faults() - parent_before;
    child_faults += minor_faults(stats_before.pid) - child_before;
  }
  const double busy = busy_us(stats_before, pool_worker());
  const auto base = summarize(echo);
  const auto sf_base = summarize(sf_echo);
  const auto compute_time = summarize(compute);
  auto row = [&](const std::string& path, const timing& t, bool transfer, double subtract) {
    auto when = [transfer](double x) { return transfer ? nlohmann::json(x) : nlohmann::json("-"); };
    const double transport = t.median_us - subtract;
    return nlohmann::json{{"path", path},
                          {"median_ms", t.median_us / 1e3},
                          {"min_ms", t.min_us / 1e3},
                          {"mb_per_s", when(megabytes_per_second(bytes, t.median_us))},
                          {"ratio", t.median_us / base.median_us},
                          {"ratio_sf", t.median_us / sf_base.median_us},
                          {"transport_ms", when(transport / 1e3)},
                          {"transport_mb_per_s", when(megabytes_per_second(bytes, transport))},
                          {"transport_ratio_sf", when(transport / sf_base.median_us)}};
  };
  return {"large",
          "pool (b): one segment T=500, D=20000 (CTC, 1 label; ~40 MB each way), median of " +
              std::to_string(runs) + " runs; baselines = raw pipe echoes of the same bytes",
          {{"path", "path", 46},
           {"median_ms", "median_ms", 11},
           {"min_ms", "min_ms", 9},
           {"mb_per_s", "MB/s", 8},
           {"ratio", "ratio", 7},
           {"ratio_sf", "ratio_sf", 10},
           {"transport_ms", "transp_ms", 11},
           {"transport_mb_per_s", "transp_MB/s", 13},
           {"transport_ratio_sf", "transp_ratio_sf", 17}},
          {row("raw pipe echo, streaming (/bin/cat)", base, true, 0),
           row("raw pipe echo, store-and-forward (fork)", sf_base, true, 0),
           row("in-process: sim::criterion only", compute_time, false, 0),
           row("in-process: child work (unpickle+sim+encode)", summarize(service), false, 0),
           row("pool_client::compute_segment (facade)", summarize(facade), true,
               compute_time.median_us)},
          {"ratio = time / streaming echo, ratio_sf = time / store-and-forward echo of the same "
           "bytes; 1.0 = pipe limit. MB/s = (request + reply bytes) / time.",
           "cat streams (both directions overlap); the store-and-forward echo, like a Sprint "
           "child, reads the whole message before it writes: the fair pipe limit here.",
           "transp = the facade's time minus the in-process sim::criterion time: encode, both "
           "pipe transfers, the child's unpickle/copy and reply encode, the parent's decode and "
           "copy_rows, and the actor hops.",
           "message sizes: request " + std::to_string(child.request_bytes()) + " B, reply " +
               std::to_string(child.reply_bytes()) +
               " B; first call (fresh 40 MB buffers on both sides, untimed above): " +
               format_fixed(first_us / 1e3, 1) + " ms.",
           "worker busy per request (its own count: request handed to the io thread -> reply "
           "decoded; mean): " +
               format_fixed(busy / 1e3, 1) +
               " ms; the rest is encode, copy_rows and the facade/pool hops.",
           "minor page faults per steady-state request (4 KiB pages; 40 MB = 9766): parent " +
               std::to_string(parent_faults / runs) + ", child " +
               std::to_string(child_faults / runs) + ".",
           loss_note(loss, child_loss)}};
}

section batch_scaling(context& cx, const std::vector<int64_t>& lengths) {
  const int runs = cx.options.common.repeat;
  auto lp = tensor::zeros({batch_frames, batch_segments, batch_dim});
  fill_log_posteriors(lp.data(), batch_frames * batch_segments, batch_dim, 3);
  std::vector<std::string> tags;
  std::vector<sim::row_matrix_f> segments;
  for (size_t b = 0; b < batch_segments; ++b) {
    tags.push_back("bench/batch-" + std::to_string(b));
    auto slice = segment_slice(lp, b, static_cast<size_t>(lengths[b]));
    segments.emplace_back(lengths[b], batch_dim);
    for (size_t t = 0; t < slice.rows; ++t)
      std::copy(slice.row(t), slice.row(t) + batch_dim, segments.back().row(t).data());
  }
  auto crit = load_criterion(cx.corpus);
  std::vector<float> expected(batch_segments);
  sim::row_matrix_f es(batch_frames, batch_dim);
  auto serial_compute = [&] {
    for (size_t b = 0; b < batch_segments; ++b) {
      auto r = crit.loss_and_error_signal(tags[b], segments[b], es.topRows(lengths[b]));
      if (!r)
        throw_error("criterion", r.error());
      expected[b] = static_cast<float>(r->loss);
    }
  };
  serial_compute();
  std::vector<double> serial_samples;
  std::vector<pool_client> clients;
  std::vector<tensor> reuse(std::size(instance_counts));
  std::vector<std::vector<double>> samples(std::size(instance_counts));
  size_t mismatches = 0;
  for (size_t n : instance_counts)
    clients.emplace_back(cx.live.runtime(), sim_options(cx.opts.sprint_exec_path, cx.corpus, n));
  auto run_batch = [&](size_t i) {
    batch b{lp, lengths, tags, std::move(reuse[i])};
    auto result = clients[i].compute(std::move(b));
    if (!result)
      throw_error("batch", result.error());
    mismatches += result->loss != expected;
    reuse[i] = std::move(result->error_signal);
  };
  for (size_t i = 0; i < clients.size(); ++i)
    run_batch(i); // starts the workers
  for (int r = 0; r < runs; ++r) {
    time_each(1, serial_samples, serial_compute);
    for (size_t i = 0; i < clients.size(); ++i)
      time_each(1, samples[i], [&] { run_batch(i); });
  }
  const auto serial = summarize(serial_samples);
  const auto one = summarize(samples[0]);
  std::vector<nlohmann::json> rows{{{"path", "in-process: sim::criterion, 32 segments serially"},
                                    {"workers", "-"},
                                    {"median_ms", serial.median_us / 1e3},
                                    {"min_ms", serial.min_us / 1e3},
                                    {"speedup", "-"},
                                    {"ratio", 1.0}}};
  for (size_t i = 0; i < clients.size(); ++i) {
    auto stats = clients[i].stats();
    const auto t = summarize(samples[i]);
    rows.push_back(
        {{"path", "pool_client::compute, numInstances=" + std::to_string(instance_counts[i])},
         {"workers", stats ? stats->workers.size() : 0},
         {"median_ms", t.median_us / 1e3},
         {"min_ms", t.min_us / 1e3},
         {"speedup", one.median_us / t.median_us},
         {"ratio", t.median_us / serial.median_us}});
  }
  int64_t frames = 0;
  for (auto length : lengths)
    frames += length;
  return {"batch",
          "pool (c): batch of B=32 segments, D=50, lengths " + std::to_string(lengths.back()) +
              ".." + std::to_string(lengths.front()) + " (" + std::to_string(frames) +
              " frames), per batch, median of " + std::to_string(runs) + " runs",
          {{"path", "path", 52},
           {"workers", "workers", 9},
           {"median_ms", "median_ms", 11},
           {"min_ms", "min_ms", 9},
           {"speedup", "speedup", 9},
           {"ratio", "ratio", 8}},
          rows,
          {"speedup = 1-worker median / this median (2 cores here: ~2x at most). ratio = time / "
           "in-process serial compute of the same 32 segments (1.0 = one core, no transport).",
           "each batch passes the previous result's error signal back (reuse_error_signal).",
           mismatches == 0
               ? std::string{"every batch's losses equal the in-process losses (bit-exact)"}
               : "WARNING: " + std::to_string(mismatches) + " batches with differing losses"}};
}

void run_pool_bench(const pool_bench_options& options, const std::string& argv0) {
  // Forked first, while this process has a single thread.
  pipe_echo sf_echo{echo_kind::store_and_forward};
  // Log lines (warnings only) go to stderr, never into the table or JSON.
  auto logger = spdlog::stderr_color_mt("sprintrt-bench");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
  const std::string sprint_sim = find_sprint_sim(options.sprint_sim, argv0);
  // Skewed lengths: many short segments, few long ones, 300 down to 20.
  std::vector<int64_t> lengths;
  std::vector<sim::corpus_entry> segments{{small_segment, {1}}, {large_segment, {1}}};
  for (size_t b = 0; b < batch_segments; ++b) {
    const double x = static_cast<double>(batch_segments - 1 - b) / (batch_segments - 1);
    lengths.push_back(20 + static_cast<int64_t>(std::lround(280 * x * x)));
    std::vector<uint32_t> labels;
    for (int64_t i = 0; i < std::max<int64_t>(1, lengths.back() / 6); ++i)
      labels.push_back(1 + static_cast<uint32_t>((b * 7 + static_cast<size_t>(i) * 13) % 49));
    segments.push_back({"bench/batch-" + std::to_string(b), std::move(labels)});
  }
  // Declared before the runtime: removed only after every child ended.
  auto corpus = write_corpus(segments);
  pipe_echo echo{echo_kind::cat};
  bench_runtime live;
  context cx{options, corpus.path, {}, live, echo, sf_echo};
  cx.opts = sim_options(sprint_sim, cx.corpus, 1);
  std::vector<section> sections;
  const std::string load_before = machine_load();
  if (options.runs("small"))
    sections.push_back(small_segments(cx));
  if (options.runs("large"))
    sections.push_back(large_segments(cx));
  if (options.runs("batch"))
    sections.push_back(batch_scaling(cx, lengths));
  live.stop();
  sections.back().notes.push_back("machine at the start: " + load_before +
                                  "; at the end: " + machine_load() + ".");
  report(options.common, "pool", sections);
}

} // namespace

void add_pool_bench(CLI::App& app, std::string argv0) {
  auto options = std::make_shared<pool_bench_options>();
  options->common.repeat = 10;
  auto* command = app.add_subcommand(
      "pool", "end to end through sprint-sim children: small-segment round trip, 40 MB "
              "segment throughput, batch scaling over 1, 2, 4 workers; against a raw pipe echo");
  add_common_options(*command, options->common);
  command->add_option("--sprint-sim", options->sprint_sim,
                      "the sprint-sim executable [<dir of this program>/../sprint-sim/sprint-sim]");
  command
      ->add_option("--requests", options->requests,
                   "small-segment requests per run and path (each timed)")
      ->check(CLI::Range(1, 1000000));
  command->add_option("--only", options->only, "run only these parts (small, large, batch)")
      ->check(CLI::IsMember({"small", "large", "batch"}));
  command->callback([options, argv0 = std::move(argv0)] { run_pool_bench(*options, argv0); });
}

} // namespace sprintrt::bench
