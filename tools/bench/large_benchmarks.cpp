// 48 MB segments through one sprint-sim child against the pipe echo, their
// page faults and the parent's peak RSS (BENCHMARKS.md, "Large segments").

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

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

bench_corpus large_corpus(size_t batch) {
  std::vector<criterion::corpus_entry> entries;
  for (size_t b = 0; b < batch; ++b)
    entries.push_back({large_prefix + std::to_string(b), {1, 2, 3}});
  return write_corpus(entries);
}

// A [T, B, D] batch of random log-posteriors, padded to none.
batch large_batch(const large_shape& s) {
  std::vector<std::string> tags;
  for (size_t b = 0; b < s.batch; ++b)
    tags.push_back(large_prefix + std::to_string(b));
  return random_batch(std::vector<int64_t>(s.batch, static_cast<int64_t>(s.frames)), tags, s.dim,
                      5);
}

// One child (criterion=zero) and its batch; the buffers on both sides grow
// to the message size and the output is allocated in the warm-up.
struct large_rig {
  explicit large_rig(const large_shape& s)
      : corpus(large_corpus(s.batch)),
        client(world().runtime(), sim_options(corpus.path, 1, {zero_criterion})),
        data(large_batch(s)) {
    run_batch();
    run_batch();
    child_pid = first_worker(client).pid;
  }

  void run_batch() { compute_reusing(client, data, reuse); }

  bench_corpus corpus;
  pool_client client;
  batch data;
  tensor reuse;
  int child_pid = -1;
};

large_rig& rig_of(const large_shape& s) {
  return world().rig<large_rig>("large batch", [&] { return std::make_unique<large_rig>(s); });
}

// The minor page faults of process `pid` (this one for 0) from
// /proc/PID/stat, field 10 (after the command name, which ends at the last
// ')'); 0 if unknown.
uint64_t minor_faults(int pid = 0) {
  if (pid < 0)
    return 0;
  std::ifstream in{pid > 0 ? "/proc/" + std::to_string(pid) + "/stat" : "/proc/self/stat"};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  std::istringstream fields{text.substr(std::min(text.size(), text.rfind(')') + 1))};
  std::string field;
  for (int i = 3; i <= 10 && (fields >> field); ++i) {
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); 0 if absent.
double status_kb(const std::string& field) {
  std::ifstream in{"/proc/self/status"};
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, field.size() + 1, field + ":") == 0)
      return std::strtod(line.c_str() + field.size() + 1, nullptr);
  return 0;
}

// One `--helper=large-rss` process per iteration.
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
    for (const char* counter : {"increase_mb", "tensor_mb"})
      state.counters[counter] = document.at(counter).get<double>();
  }
}

} // namespace

int run_large_rss_helper(const std::vector<std::string>& args) {
  if (args.size() != 3)
    throw std::runtime_error("--helper=large-rss FRAMES DIM BATCH");
  const large_shape s{std::stoul(args[0]), std::stoul(args[1]), std::stoul(args[2])};
  auto corpus = large_corpus(s.batch);
  nlohmann::json result;
  {
    sprint_runtime rt;
    const pool_client client{rt, sim_options(corpus.path, 1, {zero_criterion})};
    // The child starts on a one-frame segment: only what the batch adds counts.
    unwrap(client.compute_segment(make_job(large_prefix + "0", 1, s.dim, 1)), "start");
    // Linux >= 4.0: "5" resets VmHWM to the current RSS.
    std::ofstream clear{"/proc/self/clear_refs"};
    const bool reset = static_cast<bool>(clear << "5" << std::flush);
    clear.close();
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
  const bool quick = world().settings().quick;
  const auto s = quick ? large_shape{200, 2001, 2} : large_shape{1000, 12001, 8};
  const std::string shape = shape_name({{"T", s.frames}, {"D", s.dim}});
  const std::string text = shape_text({{"T", s.frames}, {"D", s.dim}, {"B", s.batch}});
  const size_t request = request_bytes(large_prefix + "0", s.frames, s.dim);
  const size_t reply = reply_bytes(s.frames, s.dim);
  // The 4 KiB pages a request and a reply span: the faults of one that
  // reuses no buffer.
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
  const std::string child_work = register_child_work(
      "sim/child_work/zero/" + shape, ms, timing::real, [s] { return rig_of(s).corpus.path; },
      [s] { return make_job(large_prefix + "0", s.frames, s.dim, 5); }, sim::criterion_kind::zero);
  const std::string rss = "pool/large_batch_peak_rss/" + shape + "/B:" + std::to_string(s.batch);
  add_benchmark(rss, ms, timing::manual, [s](bench_state& state) { peak_rss(state, s); })
      ->Iterations(1)
      ->Repetitions(quick ? 1 : 3);

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
