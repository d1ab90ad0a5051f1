// Small segments through one sprint-sim child against the pipe echoes: a
// batch of B segments through pool_client::compute (criterion=zero: the
// child decodes, checks and answers in full size but computes nothing),
// per segment, against the store-and-forward echo of the same framed bytes;
// one tiny segment (real CTC) through the blocking facade, the worker actor
// from an event-based and a scoped actor, against the raw /bin/cat echo; the
// child's own work measured in this process; and RETURNN's Python parent
// (scripts/bench/returnn_parent.py) on the same batches and child.

#include <caf/scoped_actor.hpp>

#include <memory>
#include <string>
#include <vector>

#include "tools/bench/bench_support.hpp"
#include "tools/bench/bench_world.hpp"
#include "tools/bench/benchmarks.hpp"
#include "tools/bench/figure_table.hpp"
#include "tools/bench/pool_probes.hpp"
#include "tools/bench/subprocess_json.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t small_frames = 100;
constexpr size_t small_dim = 40;
const std::string small_prefix = "bench/seg-";
const std::string tiny_segment = "bench/tiny";
constexpr size_t tiny_frames = 3;
constexpr size_t tiny_dim = 4;

size_t small_batch_size() {
  return world().settings().quick ? 50 : 100;
}

// The segments of both rigs (labels in case sprint-sim ignored
// criterion=zero: it would compute a real CTC loss, still valid).
bench_corpus& corpus() {
  return world().rig<bench_corpus>("transport corpus", [] {
    std::vector<sim::corpus_entry> entries{{tiny_segment, {1}}};
    for (size_t i = 0; i < small_batch_size(); ++i)
      entries.push_back({small_prefix + std::to_string(i), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
    return std::make_unique<bench_corpus>(write_corpus(entries));
  });
}

// One child (criterion=zero) and the fixed batch sent to it.
struct small_rig {
  small_rig()
      : client(world().runtime(), sim_options(corpus().path, 1, {zero_criterion})),
        data(random_batch(std::vector<int64_t>(small_batch_size(), small_frames), tags(), small_dim,
                          11)) {
    run_batch(); // starts the child, sizes every buffer
    run_batch();
  }

  static std::vector<std::string> tags() {
    std::vector<std::string> names;
    for (size_t i = 0; i < small_batch_size(); ++i)
      names.push_back(small_prefix + std::to_string(i));
    return names;
  }

  void run_batch() { compute_reusing(client, data, reuse); }

  pool_client client;
  batch data;
  tensor reuse;
};

small_rig& small() {
  return world().rig<small_rig>("small batch", [] { return std::make_unique<small_rig>(); });
}

// One child computing the real CTC criterion, for the tiny segment.
pool_client& tiny_client() {
  return world().rig<pool_client>("tiny client", [] {
    auto client = std::make_unique<pool_client>(world().runtime(), sim_options(corpus().path, 1));
    unwrap(client->compute_segment(make_job(tiny_segment, tiny_frames, tiny_dim, 1)), "warm-up");
    return client;
  });
}

std::string echo_name(size_t request, size_t reply) {
  return "baseline/pipe_echo/store_and_forward/request:" + std::to_string(request) +
         "/reply:" + std::to_string(reply);
}

void returnn_parent(benchmark::State& state, size_t batches) {
  const auto& s = world().settings();
  const size_t b = small_batch_size();
  std::vector<std::string> args{"--sprint-exec",
                                s.sprint_sim,
                                "--frames",
                                std::to_string(small_frames),
                                "--dim",
                                std::to_string(small_dim),
                                "--batch",
                                std::to_string(b),
                                "--segments",
                                std::to_string(batches * b),
                                "--tag-prefix",
                                small_prefix,
                                "--"};
  for (auto& word : config_words(sim_options(corpus().path, 1, {zero_criterion})))
    args.push_back(std::move(word));
  auto outcome = run_script(s.python, "python3-numpy", s.scripts + "/returnn_parent.py", args);
  if (!outcome.skipped.empty())
    return skip(state, outcome.skipped);
  replay_samples(state, outcome.result.at("samples_us"), 1e-6);
  state.SetLabel("Python " + outcome.result.value("python", std::string{"?"}) + ", NumPy " +
                 outcome.result.value("numpy", std::string{"?"}));
}

} // namespace

std::string register_echo(size_t request, size_t reply) {
  const auto name = echo_name(request, reply);
  add_benchmark(name,
                [request, reply](benchmark::State& state) {
                  auto& echo = world().store_and_forward_echo();
                  echo.round_trip(request - 4, reply - 4); // sizes its buffers
                  for (auto _ : state)
                    echo.round_trip(request - 4, reply - 4);
                })
      ->UseRealTime()
      ->Unit(request > (1 << 20) ? benchmark::kMillisecond : benchmark::kMicrosecond);
  return name;
}

void register_transport_benchmarks() {
  const size_t b = small_batch_size();
  const std::string small_shape = "T:" + std::to_string(small_frames) +
                                  "/D:" + std::to_string(small_dim) + "/B:" + std::to_string(b);
  const std::string small_text = "T=" + std::to_string(small_frames) +
                                 ", D=" + std::to_string(small_dim) + ", B=" + std::to_string(b);
  const std::string small_batch = "pool/small_batch/" + small_shape + "/criterion:zero";
  add_benchmark(small_batch,
                [b](benchmark::State& state) {
                  auto& rig = small();
                  const auto before = first_worker(rig.client);
                  time_per_item(state, static_cast<double>(b), "us_per_segment",
                                [&] { rig.run_batch(); });
                  state.counters["worker_busy_us"] = busy_us(before, first_worker(rig.client));
                })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  const auto small_echo = register_echo(request_bytes(small_prefix + "0", small_frames, small_dim),
                                        reply_bytes(small_frames, small_dim));
  const std::string child_work =
      "sim/child_work/zero/T:" + std::to_string(small_frames) + "/D:" + std::to_string(small_dim);
  add_benchmark(child_work, [](benchmark::State& state) {
    child_probe child{corpus().path, make_job(small_prefix + "0", small_frames, small_dim, 3),
                      sim::criterion_kind::zero};
    for (auto _ : state)
      child.serve();
  })->Unit(benchmark::kMicrosecond);
  declare_figure("1-worker batch of small segments (" + small_text +
                     ", criterion=zero), per segment, against the store-and-forward echo",
                 "us/segment", small_batch + "@us_per_segment", small_echo, "value/baseline",
                 "<= 1.5");
  declare_figure("the worker's busy time per small request (handed to the io thread until the "
                 "reply is decoded), against the whole per-segment time",
                 "us/segment", small_batch + "@worker_busy_us", small_batch + "@us_per_segment");
  declare_figure("the child's own work per small request (criterion=zero: unpickle, checks, "
                 "reply encode), in this process, against the whole per-segment time",
                 "us/segment", child_work, small_batch + "@us_per_segment");
  const size_t chunk = world().settings().quick ? 1 : 5;
  const std::string python = "python/returnn_parent/" + small_shape + "/criterion:zero";
  add_benchmark(python, [chunk](benchmark::State& state) { returnn_parent(state, chunk); })
      ->UseManualTime()
      ->Iterations(static_cast<benchmark::IterationCount>(chunk))
      ->Unit(benchmark::kMicrosecond);
  declare_figure("the small-segment batches through sprintrt, against RETURNN's Python parent "
                 "on the same batches and child (x faster)",
                 "us/segment", small_batch + "@us_per_segment", python, "baseline/value", ">= 5",
                 "ratio", true);

  const std::string tiny_shape =
      "T:" + std::to_string(tiny_frames) + "/D:" + std::to_string(tiny_dim);
  const size_t request = request_bytes(tiny_segment, tiny_frames, tiny_dim);
  const size_t reply = reply_bytes(tiny_frames, tiny_dim);
  const size_t mean_payload = (request + reply) / 2 - 4;
  const std::string cat_echo = "baseline/pipe_echo/cat/bytes:" + std::to_string(mean_payload + 4);
  add_benchmark(cat_echo,
                [mean_payload](benchmark::State& state) {
                  auto& echo = world().cat_echo();
                  echo.round_trip(mean_payload, mean_payload);
                  for (auto _ : state)
                    echo.round_trip(mean_payload, mean_payload);
                })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  const auto tiny_echo = register_echo(request, reply);
  const std::string facade = "pool/tiny_segment/compute_segment/" + tiny_shape;
  add_benchmark(facade,
                [](benchmark::State& state) {
                  auto& client = tiny_client();
                  const auto job = make_job(tiny_segment, tiny_frames, tiny_dim, 1);
                  for (auto _ : state)
                    benchmark::DoNotOptimize(
                        unwrap(client.compute_segment(job), "compute_segment"));
                })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  const std::string tiny_text = "(T=3, D=4, CTC)";
  declare_figure("one tiny segment " + tiny_text +
                     " through pool_client::compute_segment, against the raw /bin/cat echo",
                 "us/request", facade, cat_echo, "value/baseline", "<= 3");
  declare_figure("one tiny segment " + tiny_text +
                     " through pool_client::compute_segment, against the store-and-forward echo",
                 "us/request", facade, tiny_echo);

  // The worker actor without the pool and the facade, on an io thread of
  // its own; the event-based requester sends blocks of 10, one after the
  // other, from a fresh actor per block.
  constexpr size_t block = 10;
  const std::string event_based = "worker/event_based_request/" + tiny_shape;
  add_benchmark(event_based,
                [](benchmark::State& state) {
                  auto& rt = world().runtime();
                  const auto& worker = world().direct_worker(sim_options(corpus().path, 1));
                  const auto job = make_job(tiny_segment, tiny_frames, tiny_dim, 1);
                  event_based_requests(rt.system(), worker, job, block);
                  time_per_item(state, block, "us_per_request",
                                [&] { event_based_requests(rt.system(), worker, job, block); });
                })
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  const std::string scoped = "worker/scoped_request/" + tiny_shape;
  add_benchmark(scoped,
                [](benchmark::State& state) {
                  auto& rt = world().runtime();
                  const auto& worker = world().direct_worker(sim_options(corpus().path, 1));
                  const auto job = make_job(tiny_segment, tiny_frames, tiny_dim, 1);
                  caf::scoped_actor self{rt.system()};
                  scoped_request(self, worker, job);
                  for (auto _ : state)
                    scoped_request(self, worker, job);
                })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  for (const auto& [name, text] :
       {std::pair{event_based + "@us_per_request", "an event-based actor"},
        std::pair{scoped, "a scoped actor"}})
    declare_figure("one tiny segment " + tiny_text + " to a sprint worker actor from " + text +
                       ", against the raw /bin/cat echo",
                   "us/request", name, cat_echo);
  const std::string tiny_work = "sim/child_work/ctc/" + tiny_shape;
  add_benchmark(tiny_work, [](benchmark::State& state) {
    child_probe child{corpus().path, make_job(tiny_segment, tiny_frames, tiny_dim, 1)};
    for (auto _ : state)
      child.serve();
  })->Unit(benchmark::kMicrosecond);
  declare_figure("the child's own work for the tiny segment " + tiny_text +
                     " (unpickle, criterion, reply encode), in this process, against the "
                     "facade's round trip",
                 "us/request", tiny_work, facade);
}

} // namespace sprintrt::bench
