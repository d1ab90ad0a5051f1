#include "tools/bench/pool_probes.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/corpus.hpp"
#include "sim/ctc_topology.hpp"
#include "sim/sprint_service.hpp"
#include "tools/bench/pool_setup.hpp"

namespace sprintrt::bench {

namespace {

using clock = std::chrono::steady_clock;

// The state of `count` requests sent one after the other.
struct request_chain {
  sprint_worker_actor worker;
  segment_job job;
  size_t count = 0;
  std::vector<double> samples;
  std::promise<caf::error> done;
  clock::time_point start;
};

void chain_next(caf::event_based_actor* self, std::shared_ptr<request_chain> chain) {
  if (chain->samples.size() == chain->count) {
    self->quit();
    chain->done.set_value(caf::error{});
    return;
  }
  chain->start = clock::now();
  self->request(chain->worker, caf::infinite, compute_atom::value, chain->job)
      .then(
          [self, chain](double) {
            chain->samples.push_back(micros_since(chain->start));
            chain_next(self, chain);
          },
          [self, chain](caf::error& err) {
            self->quit();
            chain->done.set_value(err);
          });
}

// sprint-sim's defaults (a named object: GCC 12 warns about a temporary).
const sim::service_options& default_service_options() {
  static const sim::service_options options;
  return options;
}

} // namespace

[[noreturn]] void throw_error(const std::string& what, const caf::error& err) {
  throw std::runtime_error(what + ": " + render(err));
}

segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed) {
  auto lp = matrix_slice::dense(frames, dim);
  fill_log_posteriors(lp.storage->data(), frames, dim, seed);
  return {name, lp, matrix_slice::dense(frames, dim)};
}

sim::criterion load_criterion(const std::string& corpus, sim::criterion_kind kind) {
  auto segments = sim::corpus::from_file(corpus);
  if (!segments)
    throw_error("corpus", segments.error());
  return sim::criterion{std::move(*segments), std::make_shared<sim::ctc_topology>(0), kind};
}

child_probe::child_probe(const std::string& corpus, const segment_job& job,
                         sim::criterion_kind kind)
    : job_(job), criterion_(load_criterion(corpus, kind)),
      error_signal_(job.log_posteriors.rows, job.log_posteriors.cols),
      request_(std::make_shared<protocol::byte_buffer>()),
      service_(load_criterion(corpus, kind), default_service_options()) {
  const auto& lp = job.log_posteriors;
  protocol::byte_buffer framed;
  if (auto err = protocol::encode_loss_command(framed, {}, job.segment, lp.rows, lp.cols, lp.row(0),
                                               lp.row_stride))
    throw_error("encode_loss_command", err);
  request_bytes_ = framed.size();
  // The child decodes the pickle without its length prefix.
  request_->append(framed.bytes().subspan(4));
  compute();
  serve();
}

double child_probe::compute() {
  const auto& lp = job_.log_posteriors;
  Eigen::Map<const sim::row_matrix_f, 0, Eigen::OuterStride<>> input{
      lp.row(0), static_cast<Eigen::Index>(lp.rows), static_cast<Eigen::Index>(lp.cols),
      Eigen::OuterStride<>(static_cast<Eigen::Index>(lp.row_stride))};
  auto result = criterion_.loss_and_error_signal(job_.segment, input, error_signal_);
  if (!result)
    throw_error("criterion", result.error());
  return result->loss;
}

void child_probe::serve() {
  reply_.clear();
  auto message = protocol::read_pickle(std::shared_ptr<const protocol::byte_buffer>{request_});
  if (!message)
    throw_error("read_pickle", message.error());
  service_.handle(*message, reply_);
}

std::vector<double> event_based_requests(caf::actor_system& system,
                                         const sprint_worker_actor& worker, const segment_job& job,
                                         size_t count) {
  auto chain = std::make_shared<request_chain>();
  chain->worker = worker;
  chain->job = job;
  chain->count = count;
  chain->samples.reserve(count);
  auto done = chain->done.get_future();
  system.spawn([chain](caf::event_based_actor* self) { chain_next(self, chain); });
  if (auto err = done.get())
    throw_error("event-based request", err);
  return std::move(chain->samples);
}

void scoped_request(caf::scoped_actor& self, const sprint_worker_actor& worker,
                    const segment_job& job) {
  caf::error error;
  self->request(worker, caf::infinite, compute_atom::value, job)
      .receive([](double) {}, [&](caf::error& err) { error = std::move(err); });
  if (error)
    throw_error("scoped request", error);
}

worker_stats stats_of(caf::scoped_actor& self, const sprint_worker_actor& worker) {
  worker_stats result;
  self->request(worker, caf::infinite, stats_atom::value)
      .receive([&](worker_stats& stats) { result = stats; },
               [&](caf::error& err) { throw_error("stats", err); });
  return result;
}

double busy_us(const worker_stats& before, const worker_stats& after) {
  const auto served = after.requests_served - before.requests_served;
  return served == 0 ? 0.0 : static_cast<double>(after.busy_ns - before.busy_ns) / 1e3 / served;
}

double facade_request(const pool_client& client, const segment_job& job) {
  auto loss = client.compute_segment(job);
  if (!loss)
    throw_error("compute_segment", loss.error());
  return *loss;
}

uint64_t minor_faults(int pid) {
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

} // namespace sprintrt::bench
