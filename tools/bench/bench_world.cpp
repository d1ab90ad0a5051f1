#include "tools/bench/bench_world.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "actors/worker/sprint_worker.hpp"

namespace sprintrt::bench {

namespace {

bench_world* current = nullptr;

} // namespace

bench_world::bench_world(bench_settings settings) : settings_(std::move(settings)) {}

bench_world::~bench_world() {
  stop();
}

sprint_runtime& bench_world::runtime() {
  if (!runtime_)
    runtime_ = std::make_unique<sprint_runtime>();
  return *runtime_;
}

pipe_echo& bench_world::echo(echo_kind kind) {
  auto& echo = echoes_[static_cast<size_t>(kind)];
  if (!echo)
    echo = std::make_unique<pipe_echo>(kind, settings_.self);
  return *echo;
}

const sprint_worker_actor& bench_world::direct_worker(const sprint_options& opts) {
  if (!worker_) {
    auto& rt = runtime();
    worker_io_ = std::make_unique<runtime::io_thread>();
    worker_ = spawn_sprint_worker(rt.system(), *worker_io_, opts, "bench worker");
  }
  return worker_;
}

void bench_world::stop() {
  // Every pool stops its workers first: a rig's helper process (the remote
  // echo) then ends without a worker noticing.
  if (runtime_)
    runtime_->stop_pools();
  for (; !order_.empty(); order_.pop_back())
    rigs_.erase(order_.back());
  // The worker sends its child `exit`; the runtime's shutdown awaits every
  // actor (this worker too) before the io thread reaps what is left.
  if (worker_)
    caf::anon_send_exit(worker_, caf::exit_reason::user_shutdown);
  worker_ = sprint_worker_actor{};
  if (runtime_)
    runtime_->shutdown();
  if (worker_io_)
    worker_io_->stop(std::chrono::seconds{5});
  runtime_.reset();
  worker_io_.reset();
  for (auto& echo : echoes_)
    echo.reset();
}

bench_world& world() {
  if (!current)
    throw std::logic_error("sprintrt-bench: no bench_world");
  return *current;
}

void set_world(bench_world* w) {
  current = w;
}

} // namespace sprintrt::bench
