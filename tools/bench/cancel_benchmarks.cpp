// What cancelling a batch costs the pool's next batch, with the children kept
// (their abandoned segments finish, the replies dropped), killed and
// restarted, or either as `onCancel` "auto" decides, for children that start
// slowly like a real Sprint (BENCHMARKS.md, "Cancelling a batch").

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/stop_token.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t segments = 16;
constexpr size_t frames = 20;
constexpr size_t dim = 8;
/// How long a child takes to start (a real RASR: 0.1-0.3 s).
constexpr size_t init_ms = 200;
/// How far into the batch it is cancelled: every child is computing one of
/// its segments, with others written behind.
constexpr std::chrono::milliseconds cancel_after{30};

struct cancel_rig {
  cancel_rig(size_t segment_ms, cancel_policy policy)
      : corpus(make_corpus()), client(world().runtime(), options(corpus.path, segment_ms, policy)),
        big(random_batch(std::vector<int64_t>(segments, frames), numbered("seg-", segments), dim,
                         1)),
        next(random_batch({frames, frames}, {"seg-0", "seg-1"}, dim, 2)) {
    unwrap(client.compute(next), "warm-up batch");
  }

  static bench_corpus make_corpus() {
    std::vector<criterion::corpus_entry> entries;
    for (const auto& tag : numbered("seg-", segments))
      entries.push_back({tag, {1, 2, 3}});
    return write_corpus(entries);
  }

  static sprint_options options(const std::string& path, size_t segment_ms, cancel_policy policy) {
    auto opts = sim_options(path, 2,
                            {"--*.delay-ms=" + std::to_string(segment_ms),
                             "--*.init-delay-ms=" + std::to_string(init_ms)});
    opts.on_cancel = policy;
    return opts;
  }

  /// Cancels the big batch `cancel_after` into it; returns the seconds from
  /// the cancel until the next batch was computed.
  double cancel_then_next() {
    stop_source stop;
    std::thread caller{[&] {
      auto cancelled = client.compute(big, stop.get_token());
      if (cancelled || cancelled.error() != errc::cancelled)
        throw std::runtime_error("the big batch was not cancelled");
    }};
    std::this_thread::sleep_for(cancel_after);
    const auto start = bench_clock::now();
    stop.request_stop();
    caller.join();
    unwrap(client.compute(next), "the batch after the cancel");
    return seconds_since(start);
  }

  bench_corpus corpus;
  pool_client client;
  batch big;
  batch next;
};

std::string register_cancel(size_t segment_ms, cancel_policy policy, const std::string& label) {
  const std::string name = "pool/cancel_then_next/segment_ms:" + std::to_string(segment_ms) +
                           "/init_ms:" + std::to_string(init_ms) + "/on_cancel:" + label;
  add_benchmark(name, benchmark::kMillisecond, timing::manual,
                [name, segment_ms, policy](bench_state& state) {
                  auto& rig = world().rig<cancel_rig>(
                      name, [&] { return std::make_unique<cancel_rig>(segment_ms, policy); });
                  for (auto _ : state)
                    state.SetIterationTime(rig.cancel_then_next());
                });
  return name;
}

} // namespace

void register_cancel_benchmarks() {
  const bool quick = world().settings().quick;
  for (size_t segment_ms : quick ? std::vector<size_t>{10} : std::vector<size_t>{10, 100, 400}) {
    const auto keep = register_cancel(segment_ms, cancel_policy::keep, "keep");
    const auto kill = register_cancel(segment_ms, cancel_policy::kill, "kill");
    const auto automatic = register_cancel(segment_ms, cancel_policy::automatic, "auto");
    const std::string what = "from cancelling a batch (16 segments of " +
                             std::to_string(segment_ms) + " ms on 2 children starting in " +
                             std::to_string(init_ms) + " ms) to the next 2-segment batch's result";
    declare_figure(what + ": children kept, against killed", "ms", keep, kill);
    declare_figure(what + ": onCancel auto, against kept", "ms", automatic, keep);
    declare_figure(what + ": onCancel auto, against killed", "ms", automatic, kill);
  }
}

} // namespace sprintrt::bench
