#include "actors/pool/pool_singles.hpp"

#include <memory>
#include <utility>
#include <variant>

#include "actors/pool/pool_kinds.hpp"

namespace sprintrt::detail {

namespace {

/// A single request sent to a worker, until it is answered.
template <class Request>
struct sent_single {
  Request req;
  assignment held;
  /// How often it was sent again after its worker terminated.
  size_t resends = 0;
  /// How often it went elsewhere because its worker was unavailable.
  size_t reroutes = 0;
  /// Whose request it is.
  request_origin origin;
  uint64_t id = 0;
  /// Its caller cancelled it (or the pool stopped): its answer only
  /// releases the worker.
  bool abandoned = false;

  /// It back as a waiting request, first in line again.
  segment_request requeued(size_t more_resends, size_t more_reroutes) {
    return {std::move(req), resends + more_resends, reroutes + more_reroutes, std::move(origin)};
  }
};

/// Sends one single request to worker `index`. If that worker turns out to
/// be gone, the request waits again (first in line) for a worker.
template <class Request>
void send_single(pool_pointer self, size_t index, Request req, size_t resends, size_t reroutes,
                 request_origin origin) {
  using kind = kind_of<Request>;
  auto& st = self->state;
  auto used = st.workers[index].handle;
  auto held = assign(self, index, req.frames());
  // Kept until answered, so that a worker gone before reading it can be
  // given the same request again.
  auto sent = std::make_shared<sent_single<Request>>(
      sent_single<Request>{std::move(req), std::move(held), resends, reroutes, std::move(origin)});
  auto asked = kind::ask(self, used, sent->req);
  // Cancelled when the pool stops or its caller cancels it: the worker may
  // still be writing into the caller's output, so its gate closes before
  // the caller is answered, and the worker is told to drop it.
  sent->id = st.track(
      [sent](const caf::error& err) {
        sent->abandoned = true;
        sent->req.cancel(err);
      },
      sent->origin,
      [self, used, worker_request = request_id_of(asked.id())] {
        self->send(used, cancel_atom::value, worker_request);
      });
  asked.then(
      [self, sent](typename kind::reply_type& reply) {
        auto& st = self->state;
        if (sent->abandoned) {
          sent->held.release(); // computed: it counts into the speed
          serve_waiting(self);
          return;
        }
        st.untrack(sent->id);
        kind::count_served(st.stats);
        sent->req.promise.deliver(std::move(reply));
        release_and_serve(self, sent->held);
      },
      [self, sent, index, used](caf::error& err) {
        auto& st = self->state;
        if (sent->abandoned) {
          sent->held.withdraw();
          serve_waiting(self);
          return;
        }
        st.untrack(sent->id);
        if (worker_was_unavailable(err) && sent->reroutes < max_reroutes(self)) {
          // Not computed: first in line again, for another worker.
          sent->held.withdraw();
          st.waiting.push_front(sent->requeued(0, 1));
          serve_waiting(self);
          return;
        }
        if (worker_was_gone(self, index, used, err)) {
          if (sent->resends < st.source.max_resends) {
            sent->held.release();
            st.waiting.push_front(sent->requeued(1, 0));
            serve_waiting(self);
            return;
          }
          err = with_context("segment '" + sent->req.segment() + "'",
                             workers_kept_terminating(self, sent->resends));
        }
        kind::count_failed(st.stats);
        sent->req.fail(err);
        release_and_serve(self, sent->held);
      });
}

} // namespace

void serve_single(pool_pointer self, segment_request req) {
  self->state.waiting.push_back(std::move(req));
  serve_waiting(self);
}

void serve_waiting(pool_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty()) {
    auto idle = idle_worker(self);
    if (!idle) {
      // Busy workers will take them; unavailable ones would not.
      if (!any_worker_available(self)) {
        auto err = no_worker_available(self);
        auto failing = std::move(st.waiting);
        st.waiting.clear();
        for (auto& req : failing) {
          if (req.is_loss())
            loss_kind::count_failed(st.stats);
          req.fail(with_context("segment '" + req.segment() + "'", err));
        }
      }
      return;
    }
    auto req = std::move(st.waiting.front());
    st.waiting.pop_front();
    std::visit(
        [&](auto& kind_req) {
          send_single(self, *idle, std::move(kind_req), req.resends, req.reroutes,
                      std::move(req.origin));
        },
        req.what);
  }
}

void release_and_serve(pool_pointer self, assignment& held) {
  held.release();
  serve_waiting(self);
}

} // namespace sprintrt::detail
