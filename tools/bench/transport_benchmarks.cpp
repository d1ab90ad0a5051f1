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
#include "tools/bench/transport_rigs.hpp"

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

segment_job tiny_job() {
  return make_job(tiny_segment, tiny_frames, tiny_dim, 1);
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

batch_rig& small() {
  return world().rig<batch_rig>("small batch", [] {
    const size_t b = small_batch_size();
    return std::make_unique<batch_rig>(sim_options(corpus().path, 1, {zero_criterion}),
                                       random_batch(std::vector<int64_t>(b, small_frames),
                                                    numbered(small_prefix, b), small_dim, 11));
  });
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
  add_benchmark(python, us, timing::manual, [chunk, b](bench_state& state) {
    returnn_parent(state, {small_frames, small_dim, b, small_prefix, corpus().path, chunk});
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

} // namespace

// A job for `name` over random log-posteriors [frames, dim] from `seed`,
// with an error-signal slice every request writes into again.
segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed) {
  auto lp = matrix_slice::dense(frames, dim);
  criterion::fill_random_log_posteriors(lp.storage->data(), frames, dim, seed);
  return {name, lp, matrix_slice::dense(frames, dim)};
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

// Returns the counters of the first worker of `client`'s pool.
worker_stats first_worker(const pool_client& client) {
  auto stats = unwrap(client.stats(), "pool stats");
  if (stats.workers.empty())
    throw std::runtime_error("the pool reports no worker");
  return stats.workers[0];
}

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

// RETURNN's parent (scripts/bench/returnn_parent.py) on `run`, starting the
// child with the Sprint words the runtime builds.
void returnn_parent(bench_state& state, const parent_run& run) {
  const auto& s = world().settings();
  std::vector<std::string> args{"--sprint-exec",
                                s.sprint_sim,
                                "--frames",
                                std::to_string(run.frames),
                                "--dim",
                                std::to_string(run.dim),
                                "--batch",
                                std::to_string(run.batch),
                                "--segments",
                                std::to_string(run.batches * run.batch),
                                "--tag-prefix",
                                run.prefix,
                                "--"};
  auto no_variables = [](const std::string&) -> std::optional<std::string> { return {}; };
  const auto opts = sim_options(run.corpus, 1, {zero_criterion});
  for (auto& word : unwrap(config::expand_sprint_config(opts, no_variables), "sprint config"))
    args.push_back(std::move(word));
  const auto result = run_script(state, "python3-numpy", "returnn_parent.py", args);
  if (!result)
    return;
  replay_samples(state, result->at("samples_us"), 1e-6);
  state.SetLabel("Python " + result->value("python", std::string{"?"}) + ", NumPy " +
                 result->value("numpy", std::string{"?"}));
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
}

} // namespace sprintrt::bench
