// Small segments and one tiny segment through one sprint-sim child, against
// the pipe echoes (BENCHMARKS.md, "Small segments" and "One tiny segment").

#include <optional>

#include <caf/scoped_actor.hpp>

#include "config/sprint_args.hpp"
#include "tools/bench/benchmarks.hpp"
#include "tools/bench/child_program.hpp"
#include "tools/bench/pool_probes.hpp"

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

std::vector<std::string> small_tags() {
  std::vector<std::string> names;
  for (size_t i = 0; i < small_batch_size(); ++i)
    names.push_back(small_prefix + std::to_string(i));
  return names;
}

// The segments of every rig here (with labels: should sprint-sim ignore
// criterion=zero, its real CTC loss is still valid).
bench_corpus& corpus() {
  return world().rig<bench_corpus>("transport corpus", [] {
    std::vector<criterion::corpus_entry> entries{{tiny_segment, {1}}};
    for (const auto& tag : small_tags())
      entries.push_back({tag, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
    return std::make_unique<bench_corpus>(write_corpus(entries));
  });
}

// One child (criterion=zero) and the fixed batch sent to it, warmed up.
struct small_rig {
  pool_client client{world().runtime(), sim_options(corpus().path, 1, {zero_criterion})};
  batch data = random_batch(std::vector<int64_t>(small_batch_size(), small_frames), small_tags(),
                            small_dim, 11);
  tensor reuse;

  small_rig() {
    run_batch();
    run_batch();
  }

  void run_batch() { compute_reusing(client, data, reuse); }
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

segment_job tiny_job() {
  return make_job(tiny_segment, tiny_frames, tiny_dim, 1);
}

// RETURNN's parent (scripts/bench/returnn_parent.py) on `batches` small
// batches, starting the child with the Sprint words the runtime builds.
void returnn_parent(bench_state& state, size_t batches) {
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
  auto no_variables = [](const std::string&) -> std::optional<std::string> { return {}; };
  const auto opts = sim_options(corpus().path, 1, {zero_criterion});
  for (auto& word : unwrap(config::expand_sprint_config(opts, no_variables), "sprint config"))
    args.push_back(std::move(word));
  const auto result = run_script(state, "python3-numpy", "returnn_parent.py", args);
  if (!result)
    return;
  replay_samples(state, result->at("samples_us"), 1e-6);
  state.SetLabel("Python " + result->value("python", std::string{"?"}) + ", NumPy " +
                 result->value("numpy", std::string{"?"}));
}

} // namespace

std::string register_echo(size_t request, size_t reply) {
  const auto name = "baseline/pipe_echo/store_and_forward/request:" + std::to_string(request) +
                    "/reply:" + std::to_string(reply);
  add_benchmark(name, request > (1 << 20) ? benchmark::kMillisecond : benchmark::kMicrosecond,
                timing::real, [request, reply](bench_state& state) {
                  auto& echo = world().echo(echo_kind::store_and_forward);
                  run_warm(state, [&] { echo.round_trip(request - 4, reply - 4); });
                });
  return name;
}

void register_transport_benchmarks() {
  const auto us = benchmark::kMicrosecond;
  const size_t b = small_batch_size();
  const size_list small_sizes{{"T", small_frames}, {"D", small_dim}, {"B", b}};
  const std::string small_shape = shape_name(small_sizes);
  const std::string small_batch = "pool/small_batch/" + small_shape + "/criterion:zero";
  add_benchmark(small_batch, us, timing::manual, [b](bench_state& state) {
    auto& rig = small();
    const auto before = first_worker(rig.client);
    time_per_item(state, static_cast<double>(b), "us_per_segment", [&] { rig.run_batch(); });
    state.counters["worker_busy_us"] = busy_us(before, first_worker(rig.client));
  });
  const auto small_echo = register_echo(request_bytes(small_prefix + "0", small_frames, small_dim),
                                        reply_bytes(small_frames, small_dim));
  const std::string small_work = register_child_work(
      "sim/child_work/zero/" + shape_name({{"T", small_frames}, {"D", small_dim}}), us, timing::cpu,
      [] { return corpus().path; },
      [] { return make_job(small_prefix + "0", small_frames, small_dim, 3); },
      sim::criterion_kind::zero);
  const std::string per_segment = small_batch + "@us_per_segment";
  declare_figure("1-worker batch of small segments (" + shape_text(small_sizes) +
                     ", criterion=zero), per segment, against the store-and-forward echo",
                 "us/segment", per_segment, small_echo, "value/baseline", "<= 1.5");
  declare_figure("the worker's busy time per small request (handed to the io thread until the "
                 "reply is decoded), against the whole per-segment time",
                 "us/segment", small_batch + "@worker_busy_us", per_segment);
  declare_figure("the child's own work per small request (criterion=zero: unpickle, checks, "
                 "reply encode), in this process, against the whole per-segment time",
                 "us/segment", small_work, per_segment);
  const size_t chunk = world().settings().quick ? 1 : 5;
  const std::string python = "python/returnn_parent/" + small_shape + "/criterion:zero";
  add_benchmark(python, us, timing::manual, [chunk](bench_state& state) {
    returnn_parent(state, chunk);
  })->Iterations(static_cast<benchmark::IterationCount>(chunk));
  declare_figure("the small-segment batches through sprintrt, against RETURNN's Python parent "
                 "on the same batches and child (x faster)",
                 "us/segment", per_segment, python, "baseline/value", ">= 5", "ratio", true);

  const std::string tiny_shape = shape_name({{"T", tiny_frames}, {"D", tiny_dim}});
  const size_t request = request_bytes(tiny_segment, tiny_frames, tiny_dim);
  const size_t reply = reply_bytes(tiny_frames, tiny_dim);
  const size_t mean_payload = (request + reply) / 2 - 4;
  const std::string cat_echo = "baseline/pipe_echo/cat/bytes:" + std::to_string(mean_payload + 4);
  add_benchmark(cat_echo, us, timing::real, [mean_payload](bench_state& state) {
    auto& echo = world().echo(echo_kind::cat);
    run_warm(state, [&] { echo.round_trip(mean_payload, mean_payload); });
  });
  const auto tiny_echo = register_echo(request, reply);
  const std::string facade = "pool/tiny_segment/compute_segment/" + tiny_shape;
  add_benchmark(facade, us, timing::real, [](bench_state& state) {
    auto& client = tiny_client();
    const auto job = tiny_job();
    for (auto _ : state)
      benchmark::DoNotOptimize(unwrap(client.compute_segment(job), "compute_segment"));
  });
  const std::string tiny_text = "one tiny segment (T=3, D=4, CTC)";
  declare_figure(tiny_text + " through pool_client::compute_segment, against the raw /bin/cat echo",
                 "us/request", facade, cat_echo, "value/baseline", "<= 3");
  declare_figure(tiny_text +
                     " through pool_client::compute_segment, against the store-and-forward echo",
                 "us/request", facade, tiny_echo);

  // Blocks of 10 requests, one after the other, from a fresh actor each.
  constexpr size_t block = 10;
  const std::string event_based = "worker/event_based_request/" + tiny_shape;
  add_benchmark(event_based, us, timing::manual, [](bench_state& state) {
    auto& system = world().runtime().system();
    const auto& worker = world().direct_worker(sim_options(corpus().path, 1));
    const auto job = tiny_job();
    event_based_requests(system, worker, job, block);
    time_per_item(state, block, "us_per_request",
                  [&] { event_based_requests(system, worker, job, block); });
  });
  const std::string scoped = "worker/scoped_request/" + tiny_shape;
  add_benchmark(scoped, us, timing::real, [](bench_state& state) {
    const auto& worker = world().direct_worker(sim_options(corpus().path, 1));
    const auto job = tiny_job();
    caf::scoped_actor self{world().runtime().system()};
    run_warm(state, [&] { scoped_request(self, worker, job); });
  });
  for (const auto& [name, text] :
       {std::pair{event_based + "@us_per_request", "an event-based actor"},
        std::pair{scoped, "a scoped actor"}})
    declare_figure(tiny_text + " to a sprint worker actor from " + text +
                       ", against the raw /bin/cat echo",
                   "us/request", name, cat_echo);
  const std::string tiny_work = register_child_work(
      "sim/child_work/ctc/" + tiny_shape, us, timing::cpu, [] { return corpus().path; }, tiny_job,
      sim::criterion_kind::full_sum);
  declare_figure("the child's own work for the tiny segment (T=3, D=4, CTC) (unpickle, criterion, "
                 "reply encode), in this process, against the facade's round trip",
                 "us/request", tiny_work, facade);
}

} // namespace sprintrt::bench
