// 48 MB segments (T=1000, D=12001) through children, by the pipes and
// through the shared region (docs/protocol.md section 7), on 1 and 2
// workers, against the pipe echo, two memcpys and RETURNN's parent; their
// page faults, the first batch of a fresh process and its peak RSS; and the
// segment size from which the region pays (BENCHMARKS.md, "Large segments").

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "tools/bench/bench.hpp"
#include "tools/bench/transport_rigs.hpp"

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
  for (const auto& tag : numbered(large_prefix, batch))
    entries.push_back({tag, {1, 2, 3}});
  return write_corpus(entries);
}

// A [T, B, D] batch of random log-posteriors, padded to none.
batch large_batch(const large_shape& s) {
  return random_batch(std::vector<int64_t>(s.batch, static_cast<int64_t>(s.frames)),
                      numbered(large_prefix, s.batch), s.dim, 5);
}

// How a rig's segments travel: the pipes, or the child's shared region
// (docs/protocol.md section 7) from the first byte on.
enum class transport { pipe, shm };

std::string transport_name(transport t) {
  return t == transport::pipe ? "pipe" : "shm";
}

// sprint-sim options (criterion=zero) with `workers` children and `t`.
sprint_options zero_options(const std::string& corpus, size_t workers, transport t) {
  auto opts = sim_options(corpus, workers, {zero_criterion});
  opts.shared_memory =
      t == transport::pipe ? shared_memory_mode::off : shared_memory_mode::automatic;
  opts.shared_memory_threshold = 0;
  return opts;
}

struct large_rig {
  large_rig(const large_shape& s, transport t, size_t workers)
      : corpus(large_corpus(s.batch)), run(zero_options(corpus.path, workers, t), large_batch(s)),
        child_pid(first_worker(run.client).pid) {
    uint64_t shared = 0;
    for (const auto& w : unwrap(run.client.stats(), "pool stats").workers)
      shared += w.shared_memory_requests;
    if ((t == transport::shm) != (shared > 0))
      throw std::runtime_error("the large batch did not take the " + transport_name(t));
  }

  bench_corpus corpus;
  batch_rig run;
  int child_pid;
};

large_rig& large(const large_shape& s, transport t = transport::pipe, size_t workers = 1) {
  return world().rig<large_rig>("large batch " + transport_name(t) + " " + std::to_string(workers),
                                [&] { return std::make_unique<large_rig>(s, t, workers); });
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

// Registers the large batch of `s` through `t` on `workers` children;
// returns its name.
std::string register_large_batch(const large_shape& s, transport t, size_t workers, double pages) {
  const std::string name = "pool/large_batch/" + shape_name({{"T", s.frames}, {"D", s.dim}}) +
                           "/B:" + std::to_string(s.batch) +
                           "/criterion:zero/transport:" + transport_name(t) +
                           "/workers:" + std::to_string(workers);
  add_benchmark(
      name, benchmark::kMillisecond, timing::manual, [s, t, workers, pages](bench_state& state) {
        auto& rig = large(s, t, workers);
        const auto parent = minor_faults();
        const auto child = minor_faults(rig.child_pid);
        time_per_item(state, static_cast<double>(s.batch), "ms_per_segment",
                      [&] { rig.run.run_batch(); });
        const auto requests = static_cast<double>(state.iterations() * s.batch);
        state.counters["parent_faults"] = static_cast<double>(minor_faults() - parent) / requests;
        state.counters["child_faults"] =
            static_cast<double>(minor_faults(rig.child_pid) - child) / requests;
        state.counters["pages"] = pages;
      });
  return name + "@ms_per_segment";
}

// The steady large batch through `t` on one child, but allocating a fresh
// output each time as a trainer does that passes no tensor to reuse: the
// first batch's baseline for the same call.
std::string register_fresh_output_batch(const large_shape& s, transport t) {
  const std::string name = "pool/large_batch_fresh_output/" +
                           shape_name({{"T", s.frames}, {"D", s.dim}}) +
                           "/B:" + std::to_string(s.batch) +
                           "/criterion:zero/transport:" + transport_name(t) + "/workers:1";
  add_benchmark(name, benchmark::kMillisecond, timing::manual, [s, t](bench_state& state) {
    auto& rig = large(s, t, 1);
    for (auto _ : state) {
      const auto start = bench_clock::now();
      rig.run.run_batch_fresh_output();
      state.SetIterationTime(seconds_since(start));
    }
  });
  return name;
}

// Two memcpys per segment, of its posteriors and of its error signal, between
// warm buffers: the least any transport through memory costs.
std::string register_memcpy_pair(const large_shape& s) {
  const size_t bytes = s.frames * s.dim * sizeof(float);
  const std::string name = "baseline/memcpy_pair/bytes:" + std::to_string(bytes);
  add_benchmark(name, benchmark::kMillisecond, timing::real, [bytes](bench_state& state) {
    auto& buffers = world().rig<std::vector<char>>(
        "memcpy pair", [bytes] { return std::make_unique<std::vector<char>>(4 * bytes, 1); });
    char* data = buffers.data();
    run_warm(state, [&] {
      std::memcpy(data + bytes, data, bytes);
      std::memcpy(data + 3 * bytes, data + 2 * bytes, bytes);
      benchmark::DoNotOptimize(data);
      benchmark::ClobberMemory();
    });
  });
  return name;
}

// Batches of 8 segments of [100, dim] through one child by the pipes and by
// the shared region: where the region starts to pay (the default
// `sharedMemoryThreshold`).
void register_threshold_sweep() {
  const bool quick = world().settings().quick;
  const std::vector<size_t> dims =
      quick ? std::vector<size_t>{40, 2621} : std::vector<size_t>{40, 655, 1310, 2621, 5242, 10485};
  for (size_t dim : dims) {
    const large_shape s{100, dim, 8};
    const std::string shape = shape_name({{"T", s.frames}, {"D", dim}});
    std::string names[2];
    for (auto t : {transport::pipe, transport::shm}) {
      const std::string name =
          "pool/transport_sweep/" + shape + "/B:8/transport:" + transport_name(t);
      names[t == transport::shm] = name + "@us_per_segment";
      add_benchmark(name, benchmark::kMicrosecond, timing::manual, [s, t](bench_state& state) {
        auto& rig =
            world().rig<large_rig>("sweep " + std::to_string(s.dim) + " " + transport_name(t),
                                   [&] { return std::make_unique<large_rig>(s, t, 1); });
        time_per_item(state, static_cast<double>(s.batch), "us_per_segment",
                      [&] { rig.run.run_batch(); });
      });
    }
    declare_figure("segments of " + std::to_string(s.frames * dim * 4 / 1024) + " KiB (" +
                       shape_text({{"T", 100}, {"D", dim}, {"B", 8}}) +
                       ", criterion=zero) through the shared region, against the pipes",
                   "us/segment", names[1], names[0]);
  }
}

void register_large() {
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
  const auto pipe = register_large_batch(s, transport::pipe, 1, pages);
  const auto shm = register_large_batch(s, transport::shm, 1, pages);
  const auto pipe_2 = register_large_batch(s, transport::pipe, 2, pages);
  const auto shm_2 = register_large_batch(s, transport::shm, 2, pages);
  const auto shm_fresh = register_fresh_output_batch(s, transport::shm);
  const auto echo = register_echo(request, reply);
  const auto memcpy_pair = register_memcpy_pair(s);
  const std::string child_work = register_child_work(
      "sim/child_work/zero/" + shape, ms, timing::real, [s] { return large(s).corpus.path; },
      [s] { return make_job(large_prefix + "0", s.frames, s.dim, 5); }, sim::criterion_kind::zero);
  const std::string python =
      "python/returnn_parent/" + shape + "/B:" + std::to_string(s.batch) + "/criterion:zero";
  add_benchmark(python, ms, timing::manual, [s](bench_state& state) {
    returnn_parent(state, {s.frames, s.dim, s.batch, large_prefix, large(s).corpus.path, 1});
  })->Iterations(1);
  const std::string rss = "pool/large_batch_peak_rss/" + shape + "/B:" + std::to_string(s.batch);
  add_benchmark(rss, ms, timing::manual, [s](bench_state& state) { peak_rss(state, s); })
      ->Iterations(1)
      ->Repetitions(quick ? 1 : 3);
  register_threshold_sweep();

  const std::string large_text = "large segments (" + text + ", criterion=zero) ";
  declare_figure(large_text + "through the shared region, 1 worker, per segment: the "
                              "store-and-forward echo's time over sprintrt's (x its throughput)",
                 "ms/segment", shm, echo, "baseline/value", ">= 2");
  declare_figure(large_text + "through the shared region, 1 worker, against two memcpys of "
                              "request and reply (the physical limit)",
                 "ms/segment", shm, memcpy_pair);
  declare_figure(large_text + "through the shared region against the pipes, 1 worker (x faster)",
                 "ms/segment", shm, pipe, "baseline/value");
  declare_figure(large_text + "through the shared region, against RETURNN's Python parent on the "
                              "same batches and child (x faster)",
                 "ms/segment", shm, python, "baseline/value", "", "ratio", true);
  declare_figure(large_text + "through the pipes, 1 worker: fraction of the store-and-forward "
                              "echo's throughput",
                 "ms/segment", pipe, echo, "baseline/value", ">= 0.9");
  declare_figure(large_text + "through the shared region on 2 workers, against 1 worker (x faster)",
                 "ms/segment", shm_2, shm, "baseline/value");
  declare_figure(large_text + "through the shared region on 2 workers, against the pipes on 2 "
                              "workers (x faster)",
                 "ms/segment", shm_2, pipe_2, "baseline/value");
  declare_figure("the child's own work per large request (criterion=zero: unpickle, posterior "
                 "checks, zeros, reply encode), in this process, against the pipes' per-segment "
                 "time",
                 "ms/segment", child_work, pipe);
  for (const std::string who : {"parent", "child"})
    for (const auto* path : {&pipe, &shm}) {
      const auto batch = path->substr(0, path->find('@'));
      declare_figure("minor page faults per steady-state large request through the " +
                         std::string{path == &pipe ? "pipes" : "shared region"} + ", " + who +
                         ", against the 4 KiB pages of request and reply",
                     "faults/request", batch + "@" + who + "_faults", batch + "@pages",
                     "value/baseline", "<= 0", "value");
    }
  declare_figure("the first large batch (" + text +
                     ") in a fresh process through the shared region, against a steady-state one",
                 "ms/batch", rss, shm.substr(0, shm.find('@')), "value/baseline", "<= 1.5");
  declare_figure("the first large batch (" + text +
                     ") in a fresh process through the shared region, against a steady-state one "
                     "that also allocates its output (the same call)",
                 "ms/batch", rss, shm_fresh, "value/baseline", "<= 1.5");
  declare_figure("parent's peak RSS increase for one large batch (" + text +
                     ") through the shared region, fresh process, against the input and output "
                     "tensors",
                 "MB", rss + "@increase_mb", rss + "@tensor_mb", "value/baseline", "<= 1.5");
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
    // The child starts on a one-frame segment: the RSS counts the batch's
    // tensors and what computing it adds; the time only the computing.
    unwrap(client.compute_segment(make_job(large_prefix + "0", 1, s.dim, 1)), "start");
    // Linux >= 4.0: "5" resets VmHWM to the current RSS.
    std::ofstream clear{"/proc/self/clear_refs"};
    const bool reset = static_cast<bool>(clear << "5" << std::flush);
    clear.close();
    const double base_kb = status_kb("VmRSS");
    const double hwm_before_kb = status_kb("VmHWM");
    const batch data = large_batch(s);
    const auto start = bench_clock::now();
    unwrap(client.compute(data), "large batch");
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

void register_large_segment_benchmarks() {
  register_large();
}

} // namespace sprintrt::bench
