#include "tools/bench/pool_probes.hpp"

#include <future>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/sprint_service.hpp"

namespace sprintrt::bench {

namespace {

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

} // namespace

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

void event_based_requests(caf::actor_system& system, const sprint_worker_actor& worker,
                          const segment_job& job, size_t count) {
  std::shared_ptr<request_chain> chain{new request_chain{worker, job, count, {}}};
  auto done = chain->done.get_future();
  system.spawn([chain](caf::event_based_actor* self) { chain_next(self, chain); });
  check(done.get(), "event-based request");
}

void scoped_request(caf::scoped_actor& self, const sprint_worker_actor& worker,
                    const segment_job& job) {
  caf::error error;
  self->request(worker, caf::infinite, compute_atom::value, job)
      .receive([](double) {}, [&](caf::error& err) { error = std::move(err); });
  check(error, "scoped request");
}

worker_stats first_worker(const pool_client& client) {
  auto stats = unwrap(client.stats(), "pool stats");
  if (stats.workers.empty())
    throw std::runtime_error("the pool reports no worker");
  return stats.workers[0];
}

double busy_us(const worker_stats& before, const worker_stats& after) {
  const auto served = after.requests_served - before.requests_served;
  return served == 0 ? 0.0 : static_cast<double>(after.busy_ns - before.busy_ns) / 1e3 / served;
}

} // namespace sprintrt::bench
