#include "tools/sprintrt/doctor_remote.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/remote/remote_handshake.hpp"
#include "actors/remote/remote_tls.hpp"
#include "sprintrt/remote_interface.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "sprintrt/version.hpp"

namespace sprintrt::cli {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

/// How long connecting and the handshake may take (as a remote worker's
/// default).
constexpr std::chrono::seconds connect_timeout{10};

std::string ms_since(clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f ms",
                std::chrono::duration<double, std::milli>(clock::now() - start).count());
  return text;
}

/// A short name of an options key for the terminal (its FNV-1a hash): the
/// server does not send its own, so equal keys show as the handshake passing.
std::string key_digest(const std::string& key) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : key)
    hash = (hash ^ c) * 1099511628211ull;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

/// Checks one remote pool; see `check_remote_pools`.
class remote_check {
public:
  remote_check(caf::actor_system& system, const sprint_options& opts,
               const remote_endpoint& endpoint, const std::function<void(const std::string&)>& say,
               json& entry)
      : system_(system), self_(system), opts_(opts), endpoint_(endpoint),
        name_(endpoint.host + ":" + std::to_string(endpoint.port)), say_(say), entry_(entry) {}

  /// Checks the pool, computing `segment` there if given: the failure, or
  /// nothing.
  std::optional<remote_failure> run(const std::optional<doctor_segment>& segment) {
    const auto& tls = opts_.remote_tls;
    entry_["endpoint"] = name_;
    entry_["tls"] = !tls.empty();
    if (auto problem = sprintrt::detail::tls_problem(system_, tls); !problem.empty())
      return fail(problem);
    auto remote = connect();
    if (!remote)
      return failure_;
    if (!handshake(*remote))
      return failure_;
    if (segment && !compute(*remote, *segment))
      return failure_;
    entry_["ok"] = true;
    return std::nullopt;
  }

private:
  std::optional<remote_pool_actor> connect() {
    const auto& tls = opts_.remote_tls;
    auto connector =
        tls.empty() ? system_.middleman().actor_handle() : system_.openssl_manager().actor_handle();
    auto start = clock::now();
    std::optional<remote_pool_actor> remote;
    self_
        ->request(connector, connect_timeout, caf::connect_atom::value, endpoint_.host,
                  endpoint_.port)
        .receive(
            [&](const caf::node_id&, caf::strong_actor_ptr& ptr,
                const std::set<std::string>& interface) {
              if (!ptr)
                fail("no actor is published there");
              else if (interface != system_.message_types<remote_pool_actor>())
                fail("what is published there is not a sprintrt remote pool of this version "
                     "(its messaging interface differs)");
              else
                remote = caf::actor_cast<remote_pool_actor>(ptr);
            },
            [&](caf::error& err) {
              fail("cannot connect" + std::string{tls.empty() ? "" : " over TLS"} + ": " +
                   render(err) + sprintrt::detail::connect_failure_hint(tls, err));
            });
    if (remote) {
      entry_["connect_ms"] =
          std::chrono::duration<double, std::milli>(clock::now() - start).count();
      say_("remote " + name_ + ": connected " + (tls.empty() ? "over plain TCP" : "over TLS") +
           " in " + ms_since(start));
    }
    return remote;
  }

  bool handshake(const remote_pool_actor& remote) {
    auto key = sprintrt::detail::remote_options_key(opts_);
    auto start = clock::now();
    bool ok = false;
    self_
        ->request(remote, connect_timeout, hello_atom::value, std::string{remote_interface_version},
                  key)
        .receive(
            [&](uint64_t workers) {
              ok = true;
              entry_["workers"] = workers;
              entry_["options_key"] = key;
              entry_["release"] = SPRINTRT_RELEASE;
              say_("remote " + name_ + ": handshake ok in " + ms_since(start) + ": sprintrt " +
                   SPRINTRT_RELEASE + " on both ends, the same Sprint options (key " +
                   key_digest(key) + "), a pool of " + std::to_string(workers) + " workers");
            },
            [&](caf::error& err) {
              fail(err == caf::sec::request_timeout ? "no answer to the handshake in time"
                                                    : "the handshake was refused: " + render(err));
            });
    return ok;
  }

  bool compute(const remote_pool_actor& remote, const doctor_segment& segment) {
    remote_segment request;
    request.segment = segment.name;
    request.log_posteriors.rows = segment.frames;
    request.log_posteriors.cols = segment.dim;
    request.log_posteriors.values = make_float_storage(segment.frames * segment.dim);
    auto& values = *request.log_posteriors.values;
    std::fill(values.data(), values.data() + values.size(),
              -std::log(static_cast<float>(segment.dim)));
    auto start = clock::now();
    bool ok = false;
    // A trainer's budget for one segment at a remote pool, which retries
    // a child that died (remote_source.cpp).
    auto deadline = opts_.reply_timeout * static_cast<int64_t>(opts_.max_retries + 1);
    self_->request(remote, deadline, compute_atom::value, std::move(request))
        .receive(
            [&](remote_loss& reply) {
              ok = true;
              double norm = 0;
              if (const auto& signal = reply.error_signal.values)
                for (size_t i = 0; i < signal->size(); ++i)
                  norm += static_cast<double>(signal->data()[i]) * signal->data()[i];
              entry_["segment"] = {{"name", segment.name},
                                   {"loss", reply.loss},
                                   {"error_signal_l2", std::sqrt(norm)}};
              say_("remote " + name_ + ": segment '" + segment.name + "' (" +
                   std::to_string(segment.frames) + " x " + std::to_string(segment.dim) +
                   ", uniform posteriors): loss " + std::to_string(reply.loss) +
                   ", |error signal| " + std::to_string(std::sqrt(norm)) + ", " + ms_since(start));
            },
            [&](caf::error& err) { fail("segment '" + segment.name + "': " + render(err)); });
    return ok;
  }

  std::optional<remote_failure> fail(const std::string& what) {
    entry_["ok"] = false;
    entry_["diagnosis"] = what;
    failure_ = remote_failure{"remote", "remote pool " + name_ + ": " + what};
    return failure_;
  }

  caf::actor_system& system_;
  caf::scoped_actor self_;
  const sprint_options& opts_;
  const remote_endpoint& endpoint_;
  std::string name_;
  const std::function<void(const std::string&)>& say_;
  json& entry_;
  std::optional<remote_failure> failure_;
};

} // namespace

std::optional<remote_failure> check_remote_pools(const sprint_options& opts,
                                                 const std::optional<doctor_segment>& segment,
                                                 const std::function<void(const std::string&)>& say,
                                                 json& summary) {
  sprint_runtime runtime{runtime_settings_for(opts)};
  std::optional<remote_failure> failure;
  for (const auto& endpoint : opts.remote) {
    json entry = json::object();
    failure = remote_check{runtime.system(), opts, endpoint, say, entry}.run(segment);
    summary.push_back(std::move(entry));
    if (failure)
      break;
  }
  runtime.shutdown();
  return failure;
}

} // namespace sprintrt::cli
