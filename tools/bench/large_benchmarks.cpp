// Large segments (48 MB each way): a batch of B through one sprint-sim child
// (criterion=zero) per segment against the store-and-forward echo of the
// same bytes, with the minor page faults of the parent and the child per
// steady-state request (/proc/PID/stat) against the pages the messages span;
// the child's own work measured in this process; and the parent's peak RSS
// increase for one batch, measured in a fresh process
// (`--helper=large-rss`), against the input and output tensors.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include <spdlog/spdlog.h>

#include "tools/bench/benchmarks.hpp"
#include "tools/bench/child_program.hpp"
#include "tools/bench/pool_probes.hpp"

namespace sprintrt::bench {

namespace {

const std::string large_prefix = "bench/large-";

struct large_shape {
  size_t frames;
  size_t dim;
  size_t batch;
};

large_shape shape_of(bool quick) {
  return quick ? large_shape{200, 2001, 2} : large_shape{1000, 12001, 8};
}

std::vector<std::string> large_tags(size_t batch) {
  std::vector<std::string> tags;
  for (size_t b = 0; b < batch; ++b)
    tags.push_back(large_prefix + std::to_string(b));
  return tags;
}

bench_corpus large_corpus(size_t batch) {
  std::vector<criterion::corpus_entry> entries;
  for (const auto& tag : large_tags(batch))
    entries.push_back({tag, {1, 2, 3}});
  return write_corpus(entries);
}

// A [T, B, D] batch (random log-posteriors, padded to none).
batch large_batch(const large_shape& s) {
  return random_batch(std::vector<int64_t>(s.batch, static_cast<int64_t>(s.frames)),
                      large_tags(s.batch), s.dim, 5);
}

struct large_rig {
  explicit large_rig(const large_shape& s)
      : shape(s), corpus(large_corpus(s.batch)),
        client(world().runtime(), sim_options(corpus.path, 1, {zero_criterion})),
        data(large_batch(s)) {
    // The child's and the worker's buffers grow to the message size, the
    // output is allocated once and reused after.
    run_batch();
    run_batch();
    child_pid = first_worker(client).pid;
  }

  void run_batch() { compute_reusing(client, data, reuse); }

  large_shape shape;
  bench_corpus corpus;
  pool_client client;
  batch data;
  tensor reuse;
  int child_pid = -1;
};

// The minor page faults of process `pid` so far (this process for 0), from
// /proc/PID/stat; 0 if unknown (also for a negative pid).
uint64_t minor_faults(int pid = 0) {
  if (pid < 0)
    return 0;
  std::ifstream in{pid > 0 ? "/proc/" + std::to_string(pid) + "/stat" : "/proc/self/stat"};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  // Fields after the command name, which ends at the last ')': state is
  // field 3, minflt field 10.
  std::istringstream fields{text.substr(std::min(text.size(), text.rfind(')') + 1))};
  std::string field;
  for (int i = 3; i <= 10 && (fields >> field); ++i) {
  }
  return std::strtoull(field.c_str(), nullptr, 10);
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

void peak_rss(bench_state& state, const large_shape& s) {
  const auto& w = world().settings();
  for (auto _ : state) {
    auto document =
        run_json({w.self, "--helper=large-rss", "--sprint-sim=" + w.sprint_sim,
                  std::to_string(s.frames), std::to_string(s.dim), std::to_string(s.batch)},
                 "sprintrt-bench --helper=large-rss");
    if (!document.at("hwm_reset").get<bool>())
      throw std::runtime_error("VmHWM could not be reset (/proc/self/clear_refs)");
    state.SetIterationTime(document.at("batch_s").get<double>());
    state.counters["increase_mb"] = document.at("increase_mb").get<double>();
    state.counters["tensor_mb"] = document.at("tensor_mb").get<double>();
  }
}

large_rig& rig_of(const large_shape& s) {
  return world().rig<large_rig>("large batch", [&] { return std::make_unique<large_rig>(s); });
}

} // namespace

int run_large_rss_helper(const std::vector<std::string>& args) {
  spdlog::set_level(spdlog::level::warn);
  if (args.size() != 3)
    throw std::runtime_error("--helper=large-rss FRAMES DIM BATCH");
  const large_shape s{std::stoul(args[0]), std::stoul(args[1]), std::stoul(args[2])};
  auto corpus = large_corpus(s.batch);
  nlohmann::json result;
  {
    sprint_runtime rt;
    const pool_client client{rt, sim_options(corpus.path, 1, {zero_criterion})};
    // Starts the child with a one-frame segment: what the batch adds is
    // measured, not the runtime's and the child's start.
    unwrap(client.compute_segment(make_job(large_prefix + "0", 1, s.dim, 1)), "start");
    // Linux >= 4.0: "5" resets VmHWM to the current RSS.
    bool reset = false;
    {
      std::ofstream clear{"/proc/self/clear_refs"};
      clear << "5" << std::flush;
      reset = static_cast<bool>(clear);
    }
    const double base_kb = status_kb("VmRSS");
    const double hwm_before_kb = status_kb("VmHWM");
    const auto start = bench_clock::now();
    unwrap(client.compute(large_batch(s)), "large batch");
    const double batch_s = seconds_since(start);
    const double peak_kb = status_kb("VmHWM");
    const double tensors = 2.0 * static_cast<double>(s.frames * s.batch * s.dim) * sizeof(float);
    result = {{"increase_mb", (peak_kb - base_kb) / 1024},
              {"tensor_mb", tensors / (1 << 20)},
              {"batch_s", batch_s},
              {"hwm_reset", reset && hwm_before_kb <= base_kb + 1024}};
  }
  std::cout << result.dump() << std::endl;
  return 0;
}

void register_large_benchmarks() {
  const auto s = shape_of(world().settings().quick);
  const std::string shape = shape_name({{"T", s.frames}, {"D", s.dim}});
  const std::string text = shape_text({{"T", s.frames}, {"D", s.dim}, {"B", s.batch}});
  const size_t request = request_bytes(large_prefix + "0", s.frames, s.dim);
  const size_t reply = reply_bytes(s.frames, s.dim);
  // The 4 KiB pages a request and a reply span: the page faults of a
  // request that reuses no buffer.
  const double pages =
      std::ceil(static_cast<double>(request) / 4096) + std::ceil(static_cast<double>(reply) / 4096);
  const auto ms = benchmark::kMillisecond;
  const std::string name =
      "pool/large_batch/" + shape + "/B:" + std::to_string(s.batch) + "/criterion:zero";
  add_benchmark(name, ms, timing::manual, [s, pages](bench_state& state) {
    auto& rig = rig_of(s);
    const auto parent = minor_faults();
    const auto child = minor_faults(rig.child_pid);
    time_per_item(state, static_cast<double>(s.batch), "ms_per_segment", [&] { rig.run_batch(); });
    const auto requests = static_cast<double>(state.iterations() * s.batch);
    state.counters["parent_faults"] = static_cast<double>(minor_faults() - parent) / requests;
    state.counters["child_faults"] =
        static_cast<double>(minor_faults(rig.child_pid) - child) / requests;
    state.counters["pages"] = pages;
  });
  const auto echo = register_echo(request, reply);
  const std::string child_work = "sim/child_work/zero/" + shape;
  add_benchmark(child_work, ms, timing::real, [s](bench_state& state) {
    child_probe child{rig_of(s).corpus.path, make_job(large_prefix + "0", s.frames, s.dim, 5),
                      sim::criterion_kind::zero};
    for (auto _ : state)
      child.serve();
  });
  const std::string rss = "pool/large_batch_peak_rss/" + shape + "/B:" + std::to_string(s.batch);
  add_benchmark(rss, ms, timing::manual, [s](bench_state& state) { peak_rss(state, s); })
      ->Iterations(1)
      ->Repetitions(world().settings().quick ? 1 : 3);

  declare_figure("large segments (" + text +
                     ", criterion=zero) through 1 worker, per segment: fraction of the "
                     "store-and-forward echo's throughput",
                 "ms/segment", name + "@ms_per_segment", echo, "baseline/value", ">= 0.9");
  declare_figure("the child's own work per large request (criterion=zero: unpickle, posterior "
                 "checks, zeros, reply encode), in this process, against the whole per-segment "
                 "time",
                 "ms/segment", child_work, name + "@ms_per_segment");
  for (const std::string who : {"parent", "child"})
    declare_figure("minor page faults per steady-state large request, " + who +
                       ", against the 4 KiB pages of request and reply",
                   "faults/request", name + "@" + who + "_faults", name + "@pages",
                   "value/baseline", "<= 0", "value");
  declare_figure("the first large batch (" + text +
                     ") in a fresh process (fresh buffers on both sides), against a "
                     "steady-state one",
                 "ms/batch", rss, name);
  declare_figure("parent's peak RSS increase for one large batch (" + text +
                     "), fresh process, against the input and output tensors",
                 "MB", rss + "@increase_mb", rss + "@tensor_mb", "value/baseline", "<= 2.5");
}

} // namespace sprintrt::bench
