// Segments through one sprint-sim child against the pipe echoes: batches of
// small segments, one tiny segment, and 48 MB segments with their page faults
// and the parent's peak RSS (BENCHMARKS.md, "Small segments", "One tiny
// segment" and "Large segments").

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <sstream>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "config/sprint_args.hpp"
#include "criterion/random_posteriors.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/sprint_service.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

constexpr size_t small_frames = 100;
constexpr size_t small_dim = 40;
const std::string small_prefix = "bench/seg-";
const std::string tiny_segment = "bench/tiny";
constexpr size_t tiny_frames = 3;
constexpr size_t tiny_dim = 4;
const std::string large_prefix = "bench/large-";

struct large_shape {
  size_t frames;
  size_t dim;
  size_t batch;
};

size_t small_batch_size() {
  return world().settings().quick ? 50 : 100;
}

// A job for `name` over random log-posteriors [frames, dim] from `seed`,
// with an error-signal slice every request writes into again.
segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed) {
  auto lp = matrix_slice::dense(frames, dim);
  criterion::fill_random_log_posteriors(lp.storage->data(), frames, dim, seed);
  return {name, lp, matrix_slice::dense(frames, dim)};
}

segment_job tiny_job() {
  return make_job(tiny_segment, tiny_frames, tiny_dim, 1);
}

// The framed sizes of a loss request for `segment` of [frames, dim] and of
// its reply.
size_t request_bytes(const std::string& segment, size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, -1.0f);
  protocol::byte_buffer out;
  check(protocol::encode_loss_command(out, {}, segment, frames, dim, data.data(), dim),
        "encode_loss_command");
  return out.size();
}

size_t reply_bytes(size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, 0.0f);
  protocol::byte_buffer out;
  check(protocol::encode_loss_reply(out, {}, 0.0, frames, dim, data.data()), "encode_loss_reply");
  return out.size();
}

// The segments of the small and tiny rigs (with labels: should sprint-sim
// ignore criterion=zero, its real CTC loss is still valid).
bench_corpus& corpus() {
  return world().rig<bench_corpus>("transport corpus", [] {
    std::vector<criterion::corpus_entry> entries{{tiny_segment, {1}}};
    for (const auto& tag : numbered(small_prefix, small_batch_size()))
      entries.push_back({tag, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}});
    return std::make_unique<bench_corpus>(write_corpus(entries));
  });
}

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

// One child (criterion=zero) and the fixed batch sent to it; the buffers on
// both sides grow to the message size and the output is allocated in the
// warm-up.
struct batch_rig {
  batch_rig(const std::string& corpus, batch b)
      : client(world().runtime(), sim_options(corpus, 1, {zero_criterion})), data(std::move(b)) {
    run_batch();
    run_batch();
  }

  void run_batch() { compute_reusing(client, data, reuse); }

  pool_client client;
  batch data;
  tensor reuse;
};

batch_rig& small() {
  return world().rig<batch_rig>("small batch", [] {
    const size_t b = small_batch_size();
    return std::make_unique<batch_rig>(corpus().path,
                                       random_batch(std::vector<int64_t>(b, small_frames),
                                                    numbered(small_prefix, b), small_dim, 11));
  });
}

// Returns the counters of the first worker of `client`'s pool.
worker_stats first_worker(const pool_client& client) {
  auto stats = unwrap(client.stats(), "pool stats");
  if (stats.workers.empty())
    throw std::runtime_error("the pool reports no worker");
  return stats.workers[0];
}

struct large_rig {
  explicit large_rig(const large_shape& s)
      : corpus(large_corpus(s.batch)), run(corpus.path, large_batch(s)),
        child_pid(first_worker(run.client).pid) {}

  bench_corpus corpus;
  batch_rig run;
  int child_pid;
};

large_rig& large(const large_shape& s) {
  return world().rig<large_rig>("large batch", [&] { return std::make_unique<large_rig>(s); });
}

// One child computing the real CTC criterion, for the tiny segment.
pool_client& tiny_client() {
  return world().rig<pool_client>("tiny client", [] {
    auto client = std::make_unique<pool_client>(world().runtime(), sim_options(corpus().path, 1));
    unwrap(client->compute_segment(tiny_job()), "warm-up");
    return client;
  });
}

// A worker's mean busy time per request between two snapshots, in us.
double busy_us(const worker_stats& before, const worker_stats& after) {
  const auto served = after.requests_served - before.requests_served;
  return served == 0 ? 0.0 : static_cast<double>(after.busy_ns - before.busy_ns) / 1e3 / served;
}

// The state of `count` requests sent one after the other.
struct request_chain {
  sprint_worker_actor worker;
  segment_job job;
  size_t left = 0;
  std::promise<caf::error> done;
};

void chain_next(caf::event_based_actor* self, std::shared_ptr<request_chain> chain) {
  if (chain->left == 0) {
    self->quit();
    chain->done.set_value(caf::error{});
    return;
  }
  --chain->left;
  self->request(chain->worker, caf::infinite, compute_atom::value, chain->job)
      .then([self, chain](double) { chain_next(self, chain); },
            [self, chain](caf::error& err) {
              self->quit();
              chain->done.set_value(err);
            });
}

// Sends `count` requests for `job` to `worker` one after the other from a
// fresh event-based actor; returns after the last reply.
void event_based_requests(caf::actor_system& system, const sprint_worker_actor& worker,
                          const segment_job& job, size_t count) {
  std::shared_ptr<request_chain> chain{new request_chain{worker, job, count, {}}};
  auto done = chain->done.get_future();
  system.spawn([chain](caf::event_based_actor* self) { chain_next(self, chain); });
  check(done.get(), "event-based request");
}

// sprint-sim's defaults (a named object: GCC 12 warns about a temporary).
const sim::service_options& default_service_options() {
  static const sim::service_options options;
  return options;
}

// What the child does for one request, run in this process: the request as
// the child receives it, and a service over `corpus` computing `kind`.
class child_probe {
public:
  child_probe(const std::string& corpus, const segment_job& job, sim::criterion_kind kind)
      : service_(load_criterion(corpus, kind), default_service_options()) {
    const auto& lp = job.log_posteriors;
    protocol::byte_buffer framed;
    check(protocol::encode_loss_command(framed, {}, job.segment, lp.rows, lp.cols, lp.row(0),
                                        lp.row_stride),
          "encode_loss_command");
    request_->append(framed.bytes().subspan(4)); // the pickle without its length prefix
    serve();                                     // warm-up
  }

  void serve() {
    reply_.clear();
    auto message =
        unwrap(protocol::read_pickle(std::shared_ptr<const protocol::byte_buffer>{request_}),
               "read_pickle");
    service_.handle(message, reply_);
  }

private:
  std::shared_ptr<protocol::byte_buffer> request_ = std::make_shared<protocol::byte_buffer>();
  sim::sprint_service service_;
  protocol::byte_buffer reply_;
};

// Registers benchmark `name` (returned): the child's work for one request
// (unpickle, check and compute `kind` over `corpus()`, encode the reply) for
// `job()`, in this process, once per iteration.
std::string register_child_work(const std::string& name, benchmark::TimeUnit unit, timing clock,
                                std::function<std::string()> corpus,
                                std::function<segment_job()> job, sim::criterion_kind kind) {
  add_benchmark(name, unit, clock, [corpus, job, kind](bench_state& state) {
    child_probe child{corpus(), job(), kind};
    for (auto _ : state)
      child.serve();
  });
  return name;
}

// The pipe baselines (BENCHMARKS.md, "Small segments"): an echo child over
// two pipes of 1 MiB, a round trip through the kernel without codec, actor
// or io thread. `cat` is /bin/cat, which streams, so both directions
// overlap; the store-and-forward echo (`--helper=pipe-echo`,
// serve_pipe_echo) reads a length-prefixed message whole, then writes a
// framed reply of the length its first 4 bytes ask for, in one write, as a
// Sprint child does. Ended (EOF on its stdin) and reaped with its rig.
enum class echo_kind { cat, store_and_forward };

void read_all(int fd, char* data, size_t n) {
  if (!read_fully(fd, data, n, "pipe echo"))
    throw std::runtime_error("pipe echo: the child closed its stdout");
}

class pipe_echo {
public:
  explicit pipe_echo(echo_kind kind)
      : kind_(kind), child_(spawn_program(kind == echo_kind::cat
                                              ? std::vector<std::string>{"/bin/cat"}
                                              : std::vector<std::string>{world().settings().self,
                                                                         "--helper=pipe-echo"},
                                          true, 1 << 20)) {}

  ~pipe_echo() {
    ::close(child_.to_child);
    ::close(child_.from_child);
    reap(child_.pid);
  }

  pipe_echo(const pipe_echo&) = delete;
  pipe_echo& operator=(const pipe_echo&) = delete;

  // Writes a 4-byte length and `request_payload` bytes (at least 4) and
  // reads back a 4-byte length and `reply_payload` bytes (`cat`: equal and
  // small enough for the pipes). Throws on an I/O error or a reply of the
  // wrong length.
  void round_trip(size_t request_payload, size_t reply_payload) {
    // cat writes back while it reads: only messages that the pipes and its
    // own buffer (128 KiB) hold whole cannot stall both sides.
    if (kind_ == echo_kind::cat &&
        (request_payload != reply_payload || request_payload > (1 << 17)))
      throw std::runtime_error("pipe echo: cat echoes small messages as they are");
    if (request_payload < 4)
      throw std::runtime_error("pipe echo: a request carries at least the 4-byte reply length");
    const auto reply_length = static_cast<uint32_t>(reply_payload);
    if (out_.size() != 4 + request_payload || in_.size() != 4 + reply_payload ||
        std::memcmp(out_.data() + 4, &reply_length, 4) != 0) {
      // Touch every page now, not in the timed calls.
      out_.assign(4 + request_payload, 'x');
      in_.assign(4 + reply_payload, 0);
      const auto length = static_cast<uint32_t>(request_payload);
      std::memcpy(out_.data(), &length, 4);
      std::memcpy(out_.data() + 4, &reply_length, 4);
    }
    write_fully(child_.to_child, out_.data(), out_.size(), "pipe echo");
    read_all(child_.from_child, in_.data(), in_.size());
    if (std::memcmp(in_.data(), &reply_length, 4) != 0)
      throw std::runtime_error("pipe echo: the reply has another length than asked for");
  }

private:
  echo_kind kind_;
  child_program child_;
  std::vector<char> out_;
  std::vector<char> in_;
};

// The echo child of `kind`, started on first use.
pipe_echo& echo_child(echo_kind kind) {
  return world().rig<pipe_echo>(kind == echo_kind::cat ? "cat echo" : "store-and-forward echo",
                                [kind] { return std::make_unique<pipe_echo>(kind); });
}

// Registers the store-and-forward echo of a request and a reply of these
// framed sizes; returns its name.
std::string register_echo(size_t request, size_t reply) {
  const auto name = "baseline/pipe_echo/store_and_forward/request:" + std::to_string(request) +
                    "/reply:" + std::to_string(reply);
  add_benchmark(name, request > (1 << 20) ? benchmark::kMillisecond : benchmark::kMicrosecond,
                timing::real, [request, reply](bench_state& state) {
                  auto& echo = echo_child(echo_kind::store_and_forward);
                  run_warm(state, [&] { echo.round_trip(request - 4, reply - 4); });
                });
  return name;
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

void register_small_and_tiny() {
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
    auto& echo = echo_child(echo_kind::cat);
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
    run_warm(state, [&] { // one request, waiting for the reply
      caf::error error;
      self->request(worker, caf::infinite, compute_atom::value, job)
          .receive([](double) {}, [&](caf::error& err) { error = std::move(err); });
      check(error, "scoped request");
    });
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
  const std::string name =
      "pool/large_batch/" + shape + "/B:" + std::to_string(s.batch) + "/criterion:zero";
  add_benchmark(name, ms, timing::manual, [s, pages](bench_state& state) {
    auto& rig = large(s);
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
  const auto echo = register_echo(request, reply);
  const std::string child_work = register_child_work(
      "sim/child_work/zero/" + shape, ms, timing::real, [s] { return large(s).corpus.path; },
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

int serve_pipe_echo() {
  // The message's first 4 bytes (after its length) give the reply's length;
  // the reply goes out in one write, as sprint-sim writes its framed reply.
  std::vector<char> message;
  try {
    for (uint32_t length = 0;;) {
      read_all(0, reinterpret_cast<char*>(&length), 4);
      if (message.size() < 4 + size_t{length})
        message.resize(4 + size_t{length});
      read_all(0, message.data() + 4, length);
      uint32_t reply = length;
      if (length >= 4)
        std::memcpy(&reply, message.data() + 4, 4);
      if (message.size() < 4 + size_t{reply})
        message.resize(4 + size_t{reply}); // touched once, reused after
      std::memcpy(message.data(), &reply, 4);
      write_fully(1, message.data(), 4 + size_t{reply}, "pipe echo");
    }
  } catch (...) {
    return 0; // EOF: the parent is done
  }
}

void register_transport_benchmarks() {
  register_small_and_tiny();
  register_large();
}

} // namespace sprintrt::bench
