#include "actors/pool/pool_dispatch.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/worker/commands.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/sprint_runtime.hpp"

using namespace sprintrt;
using namespace sprintrt::detail;

namespace {

/// Which worker computed which loss segment.
struct computed_by {
  std::mutex mutex;
  std::map<std::string, size_t> worker_of;
};

/// A worker that computes losses at once (recording that it did) and holds
/// every FSA export without answering: an export still in progress.
sprint_worker_actor::behavior_type export_holding_worker(sprint_worker_actor::pointer self,
                                                         std::shared_ptr<computed_by> log,
                                                         size_t index) {
  auto held = std::make_shared<std::vector<caf::typed_response_promise<segment_fsa>>>();
  return {
      [log, index](compute_atom, segment_job& job) -> double {
        std::lock_guard<std::mutex> guard{log->mutex};
        log->worker_of[job.segment] = index;
        return 1.0;
      },
      [self, held](fsa_atom, fsa_query&) -> caf::result<segment_fsa> {
        held->push_back(self->make_response_promise<segment_fsa>());
        return held->back();
      },
      [](stats_atom) { return worker_stats{}; },
      [](cancel_atom, uint64_t) {},
      [self](stop_atom) {
        self->quit();
        return int32_t{0};
      },
  };
}

/// A [2, 2, 1] batch: segment "long" of 2 frames, "short" of 1.
batch two_segments() {
  batch b;
  b.log_posteriors = *tensor::from_vector(std::vector<float>(4, std::log(0.5f)), {2, 2, 1});
  b.seq_lengths = {2, 1};
  b.tags = {"long", "short"};
  return b;
}

/// Where a batch of "long" (2 frames) and "short" (1 frame) goes while
/// worker 0 holds one FSA export, asked for by `ask_export`: LPT counts the
/// export in worker 0's load, so that "long" goes to worker 1 if the export
/// weighs anything, to worker 0 (the lower index of a tie) if it weighs 0.
template <class AskExport>
size_t worker_of_long_segment(AskExport ask_export) {
  sprint_runtime rt;
  auto log = std::make_shared<computed_by>();
  worker_source source;
  source.description = "export-holding workers";
  source.capacity = 2;
  source.make = [log](caf::actor_system& system, size_t index, const std::string&) {
    return system.spawn(export_holding_worker, log, index);
  };
  auto pool = rt.pool(source, "weights");
  caf::scoped_actor self{rt.system()};
  // One sender: the pool takes the export before the batch.
  ask_export(self, pool);
  caf::expected<batch_result> result = make_error(errc::cancelled, "no reply");
  self->request(pool, caf::infinite, compute_atom::value, two_segments())
      .receive([&](batch_result& r) { result = std::move(r); },
               [&](caf::error& err) { result = std::move(err); });
  REQUIRE(result);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  std::lock_guard<std::mutex> guard{log->mutex};
  REQUIRE(log->worker_of.size() == 2);
  CHECK(log->worker_of["long"] != log->worker_of["short"]);
  return log->worker_of["long"];
}

} // namespace

TEST_CASE("an FSA export weighs one frame in a worker's load, alone and in a batch") {
  CHECK(command_entry<export_fsa_command>::weight({fsa_source::segment_name, "corpus/rec/seg-1"}) ==
        1);
  CHECK(command_entry<export_fsa_command>::weight({fsa_source::orthography, "3 17 5"}) == 1);
  segment_job job{"seg", matrix_slice::dense(7, 3), matrix_slice::dense(7, 3)};
  CHECK(command_entry<get_loss_command>::weight(job) == 7);
  auto alone = worker_of_long_segment([](caf::scoped_actor& self, const worker_pool_actor& pool) {
    self->send(pool, fsa_atom::value, fsa_query{fsa_source::segment_name, "held"});
  });
  auto in_batch =
      worker_of_long_segment([](caf::scoped_actor& self, const worker_pool_actor& pool) {
        self->send(pool, automata_atom::value, std::vector<std::string>{"held"});
      });
  CHECK(alone == 1);
  CHECK(in_batch == 1);
}
