#include "sprintrt/sprint_runtime.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <spdlog/spdlog.h>

#include "actors/caller/actor_census.hpp"
#include "actors/caller/caller_actors.hpp"
#include "actors/caller/pool_registry.hpp"
#include "actors/caller/runtime_access.hpp"
#include "actors/execution/affine_sharing.hpp"
#include "actors/sources/child_process_source.hpp"
#include "process/io_thread.hpp"
#include "sprintrt/logging.hpp"
#include "sprintrt/remote_interface.hpp"

namespace sprintrt {

namespace {

/// How long `shutdown` lets children that were sent `exit` take before the
/// io thread kills them. Each worker already kills its child after its own
/// exitGrace; this only bounds the wait for children whose worker is gone.
constexpr std::chrono::seconds io_grace{5};

caf::actor_system_config& configure(caf::actor_system_config& cfg,
                                    const sprint_runtime::settings& config) {
  cfg.set("scheduler.max-threads", config.scheduler_threads);
  // The network layer, for remote pools (its thread waits in epoll when
  // there is no connection), and the types that cross it.
  cfg.load<caf::io::middleman>();
  add_remote_message_types(cfg);
  // Heartbeats on every connection, so that a peer that vanished without
  // closing it (a machine off the network) is noticed as a lost connection.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::seconds{5}});
  if (!config.tls.empty()) {
    cfg.openssl_certificate = config.tls.certificate;
    cfg.openssl_key = config.tls.key;
    cfg.openssl_cafile = config.tls.ca;
    cfg.load<caf::openssl::manager>();
  }
  if (config.shared_queue)
    cfg.load<caf::scheduler::coordinator<detail::affine_sharing>>();
  else
    cfg.set("scheduler.policy", caf::atom("stealing"));
  return cfg;
}

} // namespace

/// The runtime's own actor system, when it has one.
struct own_actor_system {
  explicit own_actor_system(const sprint_runtime::settings& config)
      : system(configure(system_config, config)) {}

  caf::actor_system_config system_config;
  caf::actor_system system;
};

struct sprint_runtime::impl {
  /// On `program_system` if not null, else on a system of its own.
  impl(const settings& config, caf::actor_system* program_system)
      : own_system(program_system ? nullptr : std::make_unique<own_actor_system>(config)),
        system(program_system ? *program_system : own_system->system), callers(system),
        registry(system, io, census) {
    if (config.logger)
      set_logger(config.logger);
    // The default logger is made now, before any child is forked, not by a
    // first record in a forked process.
    logger();
  }

  // Order matters: the io thread outlives the actor system (workers talk to
  // it until they are done), the registry refers to both.
  process::io_thread io;
  /// Null on the program's actor system.
  std::unique_ptr<own_actor_system> own_system;
  caf::actor_system& system;
  std::shared_ptr<detail::actor_census> census = std::make_shared<detail::actor_census>();
  detail::caller_actors callers;
  detail::pool_registry registry;
  bool shut_down = false;
};

sprint_runtime::settings runtime_settings_for(const sprint_options& opts) {
  sprint_runtime::settings config;
  config.tls = opts.remote_tls;
  return config;
}

sprint_runtime::sprint_runtime() : sprint_runtime(settings{}) {}

sprint_runtime::sprint_runtime(const settings& config)
    : impl_(std::make_unique<impl>(config, nullptr)) {}

sprint_runtime::sprint_runtime(caf::actor_system& system, const settings& config)
    : impl_(std::make_unique<impl>(config, &system)) {}

sprint_runtime::sprint_runtime(caf::actor_system& system) : sprint_runtime(system, settings{}) {}

sprint_runtime::~sprint_runtime() {
  shutdown();
}

caf::actor_system& sprint_runtime::system() noexcept {
  return impl_->system;
}

bool sprint_runtime::owns_system() const noexcept {
  return impl_->own_system != nullptr;
}

namespace {

/// `pool` checked: none after shutdown (the registry decides, under its
/// lock, so that a pool cannot slip in between `stop_all` and the wait).
worker_pool_actor made_unless_shut_down(worker_pool_actor pool) {
  if (!pool)
    logger().error("a pool was requested after the runtime was shut down: none is made");
  return pool;
}

} // namespace

worker_pool_actor sprint_runtime::pool(const sprint_options& opts) {
  return made_unless_shut_down(impl_->registry.pool(opts));
}

worker_pool_actor sprint_runtime::pool(worker_source source, std::string name) {
  return made_unless_shut_down(impl_->registry.own_pool(std::move(source), std::move(name)));
}

worker_source sprint_runtime::child_process_source(const sprint_options& opts) {
  return detail::child_process_source(impl_->io, opts);
}

namespace detail {

caller_actors& runtime_access::callers(sprint_runtime& rt) noexcept {
  return rt.impl_->callers;
}

actor_census& runtime_access::census(sprint_runtime& rt) noexcept {
  return *rt.impl_->census;
}

} // namespace detail

void sprint_runtime::stop_pools() {
  impl_->registry.stop_all();
}

void sprint_runtime::shutdown() {
  if (impl_->shut_down)
    return;
  impl_->shut_down = true;
  impl_->registry.stop_all();
  // Schedulers, and workers whose pool is gone.
  impl_->census->stop_all();
  impl_->callers.clear();
  impl_->census->await_all_done();
  if (impl_->own_system)
    impl_->system.await_all_actors_done();
  impl_->io.stop(io_grace);
}

} // namespace sprintrt
