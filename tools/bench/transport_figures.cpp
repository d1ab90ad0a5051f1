// Figures a, b and c of `sprintrt-bench all`: small segments through one
// sprint-sim child, against the pipe echoes and against RETURNN's Python
// parent driving the same child.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/messages.hpp"
#include "sim/corpus.hpp"
#include "sprintrt/pool_client.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/figure_runs.hpp"
#include "tools/bench/pool_probes.hpp"
#include "tools/bench/subprocess_json.hpp"

namespace sprintrt::bench {

namespace {

// Figure a's (and c's) segments: ASR-like, characters.
constexpr size_t small_frames = 100;
constexpr size_t small_dim = 40;
const std::string small_prefix = "bench/seg-";
// Figure b's segment.
const std::string tiny_segment = "bench/tiny";
constexpr size_t tiny_frames = 3;
constexpr size_t tiny_dim = 4;

struct batch_counts {
  size_t segments;
  size_t batch;
};

batch_counts small_counts(bool quick) {
  return quick ? batch_counts{200, 50} : batch_counts{2000, 100};
}

// A [T, B, D] batch of fixed random log-posteriors, every segment T long.
struct fixed_batch {
  tensor log_posteriors;
  std::vector<int64_t> lengths;
  std::vector<std::string> tags;
};

fixed_batch make_fixed_batch(size_t frames, size_t batch, size_t dim, uint64_t seed) {
  fixed_batch b;
  b.log_posteriors = tensor::zeros({frames, batch, dim});
  fill_log_posteriors(b.log_posteriors.data(), frames * batch, dim, seed);
  for (size_t i = 0; i < batch; ++i) {
    b.lengths.push_back(static_cast<int64_t>(frames));
    b.tags.push_back(small_prefix + std::to_string(i));
  }
  return b;
}

// Segment names for the corpus (labels in case sprint-sim ignores
// --*.criterion=zero: then it computes a real CTC loss, still valid).
std::vector<sim::corpus_entry> corpus_entries(size_t batch) {
  std::vector<sim::corpus_entry> entries{{tiny_segment, {1}}};
  for (size_t i = 0; i < batch; ++i)
    entries.push_back({small_prefix + std::to_string(i), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
  return entries;
}

worker_stats first_worker(const pool_client& client) {
  auto stats = client.stats();
  if (!stats)
    throw_error("pool stats", stats.error());
  if (stats->workers.empty())
    throw std::runtime_error("the pool reports no worker");
  return stats->workers[0];
}

// One sprint-sim child (criterion=zero) through a pool client and the fixed
// batch that figures a and c send it.
struct small_rig {
  small_rig(figure_context& cx, const std::string& corpus)
      : counts(small_counts(cx.options.quick)),
        client(cx.live.runtime(), sim_options(cx.sprint_sim, corpus, 1, {zero_criterion})),
        data(make_fixed_batch(small_frames, counts.batch, small_dim, 11)) {
    // Warm-up: starts the child, sizes every buffer.
    run_batch();
    run_batch();
  }

  void run_batch() {
    batch b{data.log_posteriors, data.lengths, data.tags, std::move(reuse)};
    auto result = client.compute(std::move(b));
    if (!result)
      throw_error("batch", result.error());
    reuse = std::move(result->error_signal);
  }

  // One batch; returns its time per segment in microseconds.
  double time_batch() {
    const auto start = std::chrono::steady_clock::now();
    run_batch();
    return micros_since(start) / static_cast<double>(counts.batch);
  }

  batch_counts counts;
  pool_client client;
  fixed_batch data;
  tensor reuse;
};

figure small_batch(figure_context& cx, const std::string& corpus, small_rig& rig) {
  const auto counts = rig.counts;
  const size_t batches = counts.segments / counts.batch;
  const size_t request = request_bytes(small_prefix + "0", small_frames, small_dim);
  const size_t reply = reply_bytes(small_frames, small_dim);
  auto run_echo = [&] {
    for (size_t i = 0; i < counts.batch; ++i)
      cx.sf_echo.round_trip(request - 4, reply - 4);
  };
  run_echo();
  run_echo();
  // What the child does per request, in this process: unpickle the
  // request, check the posteriors and write zeros, encode the reply.
  child_probe child{corpus, make_job(small_prefix + "0", small_frames, small_dim, 3),
                    sim::criterion_kind::zero};
  auto run_child = [&] {
    for (size_t i = 0; i < counts.batch; ++i)
      child.serve();
  };
  const auto before = first_worker(rig.client);
  std::vector<double> sprintrt, echo, child_work;
  const auto per_segment = static_cast<double>(counts.batch);
  for (size_t i = 0; i < batches; ++i) {
    // Alternating, so that the load of the moment hits both alike.
    sprintrt.push_back(rig.time_batch());
    time_each(1, echo, run_echo);
    time_each(1, child_work, run_child);
  }
  const auto after = first_worker(rig.client);
  for (auto* samples : {&echo, &child_work})
    for (auto& x : *samples)
      x /= per_segment;
  figure a;
  a.id = "a";
  a.title = "1-worker batch of small segments (" + shape_text(small_frames, small_dim) +
            ", B=" + std::to_string(counts.batch) + ", criterion=zero), per segment";
  a.unit = "us/segment";
  a.value = spread_of(sprintrt);
  a.baseline_name = "store-and-forward pipe echo";
  a.baseline = spread_of(echo);
  a.goal = {"<=", 1.5, true, "<= 1.5x"};
  const double busy = busy_us(before, after);
  a.details = {{"segments", batches * counts.batch},
               {"batch", counts.batch},
               {"frames", small_frames},
               {"dim", small_dim},
               {"request_bytes", request},
               {"reply_bytes", reply},
               {"worker_busy_us_per_request", busy},
               {"child_work_us_per_request", spread_of(child_work).median}};
  a.notes = {std::to_string(batches * counts.batch) + " segments in " + std::to_string(batches) +
                 " batches through pool_client::compute (error signal reused); one sample per "
                 "batch = batch time / B; the echo sends " +
                 std::to_string(request) + " B and gets " + std::to_string(reply) +
                 " B back per segment, the framed sizes of the real messages.",
             "worker busy per request (request handed to the io thread -> reply decoded): " +
                 format_fixed(busy, 1) + " us of the " + format_fixed(a.value->median, 1) +
                 " us per segment; the child decodes the request and encodes a full-size reply "
                 "(criterion=zero computes nothing): " +
                 format_fixed(spread_of(child_work).median, 1) +
                 " us per request in this process (sim::sprint_service)."};
  return a;
}

figure returnn_parent(figure_context& cx, const std::string& corpus, small_rig& rig) {
  const auto counts = rig.counts;
  const std::string title = "RETURNN's Python parent on the batches of a, per segment";
  const target goal{">=", 5, true, ">= 5x faster"};
  const std::string baseline = "RETURNN parent (Python, same child)";
  // The segments in chunks, each first through sprintrt, then through the
  // script (a fresh Python parent and child per chunk, its start untimed),
  // so that the load of the moment hits both alike.
  const size_t chunks = cx.options.quick ? 2 : 4;
  const size_t chunk_batches = std::max<size_t>(1, counts.segments / counts.batch / chunks);
  std::vector<std::string> args{"--sprint-exec",
                                cx.sprint_sim,
                                "--frames",
                                std::to_string(small_frames),
                                "--dim",
                                std::to_string(small_dim),
                                "--batch",
                                std::to_string(counts.batch),
                                "--segments",
                                std::to_string(chunk_batches * counts.batch),
                                "--tag-prefix",
                                small_prefix,
                                "--"};
  for (auto& word : config_words(sim_options(cx.sprint_sim, corpus, 1, {zero_criterion})))
    args.push_back(std::move(word));
  std::vector<double> sprintrt, python;
  script_outcome outcome;
  for (size_t k = 0; k < chunks; ++k) {
    for (size_t i = 0; i < chunk_batches; ++i)
      sprintrt.push_back(rig.time_batch());
    outcome = run_script(cx.options.python, "python3-numpy",
                         cx.options.scripts + "/returnn_parent.py", args);
    if (!outcome.skipped.empty())
      return skipped_figure("c", title, "us/segment", baseline, goal, outcome.skipped);
    for (const auto& x : outcome.result.at("samples_us"))
      python.push_back(x.get<double>());
  }
  figure c;
  c.id = "c";
  c.title = title;
  c.unit = "us/segment";
  c.value = spread_of(sprintrt);
  c.baseline_name = baseline;
  c.baseline = spread_of(python);
  c.kind = ratio_kind::baseline_over_value;
  c.goal = goal;
  c.details = {{"chunks", chunks},
               {"segments", chunks * chunk_batches * counts.batch},
               {"python", outcome.result.value("python", std::string{"?"})},
               {"numpy", outcome.result.value("numpy", std::string{"?"})}};
  c.notes = {"value = sprintrt as in a, baseline = scripts/bench/returnn_parent.py (RETURNN's "
             "SprintSubprocessInstance and get_batch_loss_and_error_signal, one instance) on the "
             "same batches, child and argv, in " +
             std::to_string(chunks) + " chunks of " + std::to_string(chunk_batches) +
             " batches alternating with sprintrt's; one sample per batch; ratio = how many times "
             "faster sprintrt is (Python " +
             outcome.result.value("python", std::string{"?"}) + ", NumPy " +
             outcome.result.value("numpy", std::string{"?"}) + ")."};
  return c;
}

figure tiny(figure_context& cx, const std::string& corpus) {
  const pool_client client{cx.live.runtime(), sim_options(cx.sprint_sim, corpus, 1)};
  const auto job = make_job(tiny_segment, tiny_frames, tiny_dim, 1);
  const size_t request = request_bytes(tiny_segment, tiny_frames, tiny_dim);
  const size_t reply = reply_bytes(tiny_frames, tiny_dim);
  const size_t mean_payload = (request + reply) / 2 - 4;
  for (int i = 0; i < 50; ++i) {
    facade_request(client, job);
    cx.cat_echo.round_trip(mean_payload);
    cx.sf_echo.round_trip(request - 4, reply - 4);
  }
  const size_t requests = cx.options.quick ? 100 : 1000;
  const size_t block = 10;
  std::vector<double> facade, cat, sf;
  for (size_t done = 0; done < requests; done += block) {
    time_each(block, cat, [&] { cx.cat_echo.round_trip(mean_payload); });
    time_each(block, sf, [&] { cx.sf_echo.round_trip(request - 4, reply - 4); });
    time_each(block, facade, [&] { facade_request(client, job); });
  }
  figure b;
  b.id = "b";
  b.title = "one tiny segment (" + shape_text(tiny_frames, tiny_dim) +
            ", CTC) through pool_client::compute_segment";
  b.unit = "us/request";
  b.value = spread_of(facade);
  b.baseline_name = "raw pipe echo (/bin/cat)";
  b.baseline = spread_of(cat);
  b.goal = {"<=", 3, true, "<= 3x"};
  const auto sf_spread = spread_of(sf);
  b.details = {{"requests", requests},
               {"request_bytes", request},
               {"reply_bytes", reply},
               {"store_and_forward_echo_us", sf_spread.median}};
  b.notes = {std::to_string(requests) + " requests, one sample each, in blocks of " +
                 std::to_string(block) + " rotating with the echoes; the /bin/cat echo moves " +
                 std::to_string(mean_payload + 4) + " B each way (the mean of request " +
                 std::to_string(request) + " B and reply " + std::to_string(reply) +
                 " B), as `pool` (a) does.",
             "against the store-and-forward echo of the exact sizes (median " +
                 format_fixed(sf_spread.median, 1) +
                 " us): " + format_fixed(b.value->median / sf_spread.median, 2) + "x."};
  return b;
}

} // namespace

size_t request_bytes(const std::string& segment, size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, -1.0f);
  protocol::byte_buffer out;
  if (auto err = protocol::encode_loss_command(out, {}, segment, frames, dim, data.data(), dim))
    throw_error("encode_loss_command", err);
  return out.size();
}

size_t reply_bytes(size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, 0.0f);
  protocol::byte_buffer out;
  if (auto err = protocol::encode_loss_reply(out, {}, 0.0, frames, dim, data.data()))
    throw_error("encode_loss_reply", err);
  return out.size();
}

std::string shape_text(size_t frames, size_t dim) {
  return "T=" + std::to_string(frames) + ", D=" + std::to_string(dim);
}

std::vector<figure> transport_figures(figure_context& cx, bool small_batch_figure, bool tiny_figure,
                                      bool with_returnn) {
  const auto counts = small_counts(cx.options.quick);
  auto corpus = write_corpus(corpus_entries(counts.batch));
  std::vector<figure> figures;
  if (small_batch_figure || with_returnn) {
    small_rig rig{cx, corpus.path};
    if (small_batch_figure)
      figures.push_back(small_batch(cx, corpus.path, rig));
    if (with_returnn)
      figures.push_back(returnn_parent(cx, corpus.path, rig));
  }
  if (tiny_figure)
    figures.push_back(tiny(cx, corpus.path));
  return figures;
}

} // namespace sprintrt::bench
