// Simulated workers that die on purpose: a death limit shared by every
// worker of a source (one recovery, not a pool that keeps failing).

#include "sprintrt/sim_worker.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>

#include "sprintrt/error.hpp"
#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/actors/sim_corpus_fixture.hpp"

using namespace sprintrt;

namespace {

constexpr size_t dim = 5;

test::sim_corpus make_corpus() {
  return test::sim_corpus{{{"rec/a", {1, 2}}, {"rec/b", {3}}}};
}

/// A single request for segment `tag` (4 frames).
segment_job job_of(const std::string& tag) {
  segment_job job{tag, matrix_slice::dense(4, dim), matrix_slice::dense(4, dim)};
  criterion::fill_random_log_posteriors(job.log_posteriors.row(0), 4, dim, 3);
  return job;
}

} // namespace

TEST_CASE("the death limit is shared by every worker the source makes, on any thread") {
  auto fx = make_corpus();
  auto opts = fx.options("--*.topology=ctc");
  sim_worker_behavior behavior;
  behavior.die_at_request = 1;
  behavior.max_deaths = 2;
  auto source = sim_worker_source(opts, behavior);
  REQUIRE(source);
  sprint_runtime rt;
  caf::scoped_actor self{rt.system()};
  // Six workers of one source, each asked once, all at the same time.
  std::vector<sprint_worker_actor> workers;
  for (size_t slot = 0; slot < 6; ++slot)
    workers.push_back(source->make(rt.system(), slot, "sim worker " + std::to_string(slot)));
  std::vector<segment_job> jobs;
  using handle =
      decltype(self->request(workers[0], caf::infinite, compute_atom::value, job_of("rec/a")));
  std::vector<handle> asked;
  for (auto& worker : workers) {
    jobs.push_back(job_of("rec/a"));
    asked.push_back(self->request(worker, caf::infinite, compute_atom::value, jobs.back()));
  }
  size_t served = 0;
  size_t died = 0;
  for (auto& h : asked)
    h.receive([&](double) { ++served; },
              [&](caf::error& err) {
                CHECK(err == caf::sec::request_receiver_down);
                ++died;
              });
  CHECK(died == 2);
  CHECK(served == 4);
  for (auto& worker : workers)
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}
