/// @file
/// The dispatcher (see the header). A segment placed by LPT waits in its
/// worker's list; a worker holds `segments_ahead` of a request's segments at
/// a time and gets the next when it answered one, so that all workers stay
/// busy without the pool between two segments. A segment placed when idle
/// waits in the pool's queue. Both are sent, answered and failed alike.

#include "actors/pool/pool_dispatch.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <caf/sec.hpp>

#include "actors/pool/failure_policy.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

/// Sends item `item` of `req` (assigned to worker `w`) to worker `w`.
void send(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w, placed_item item);

/// Handles an answer to item `sent` of `req`, sent to worker `w` as
/// `worker_request`, if the request was abandoned meanwhile: it only frees
/// its worker (counting what it `computed` into its measured speed).
/// Returns whether it was abandoned.
bool drop_if_abandoned(pool_pointer self, pool_request& req, size_t w, placed_item& sent,
                       uint64_t worker_request, bool computed);

/// Ends item `sent` of `req` (answered or failed): frees its worker, then
/// finishes the request if it was the last, or sends worker `w` the next
/// of its list.
void item_done(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
               placed_item& sent);

/// Handles worker `w`'s (`used`'s) error `err` for item `sent` of `req` by
/// the failure policy: the item is resent, rerouted or failed.
void item_error(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
                placed_item sent, const sprint_worker_actor& used, caf::error err);

/// Returns item `index`'s weight in its worker's load.
int64_t item_weight(const pool_request& req, size_t index) {
  return std::visit(
      [index](const auto& of) { return entry_of<decltype(of)>::weight(of.work[index]); },
      req.items);
}

/// Counts item `index` of `req` as failed with `err` and keeps the failure
/// (see `item_failure`), as met in this pool (`in_pool`) if no pool saw it
/// before.
void item_failed(pool_pointer self, pool_request& req, size_t index, caf::error err,
                 bool from_pool) {
  std::visit([self](const auto& of) { entry_of<decltype(of)>::count_failed(self->state.stats); },
             req.items);
  req.failures.emplace(index, item_failure{in_pool(self->state.label, err), from_pool});
}

/// Answers the caller of `req`, every item of which is done, and forgets
/// it in the registry.
void finish(pool_pointer self, const std::shared_ptr<pool_request>& req) {
  self->state.complete(req->id);
  req->answer.done(self, *req);
}

/// Sends item `item` of `req`, whose items are `of`, to worker `w`.
template <class Command>
void send_item(pool_pointer self, const std::shared_ptr<pool_request>& req,
               const command_items<Command>& of, size_t w, placed_item item) {
  // Kept until answered, so that it can be placed again.
  auto sent = std::make_shared<placed_item>(std::move(item));
  ++req->outstanding[w];
  auto used = self->state.workers[w].handle;
  auto asked = self->request(used, caf::infinite, Command::atom::value, of.work[sent->index]);
  auto worker_request = request_id_of(asked.id());
  req->at_workers.emplace(worker_request, used);
  asked.then(
      [self, req, w, sent, used, worker_request](typename Command::reply& reply) {
        count_answer(self, w, used, nullptr);
        if (drop_if_abandoned(self, *req, w, *sent, worker_request, true))
          return;
        std::get<command_items<Command>>(req->items).replies[sent->index] = std::move(reply);
        command_entry<Command>::count_served(self->state.stats);
        item_done(self, req, w, *sent);
      },
      [self, req, w, sent, used, worker_request](caf::error& err) {
        count_answer(self, w, used, &err);
        if (drop_if_abandoned(self, *req, w, *sent, worker_request, false))
          return;
        item_error(self, req, w, std::move(*sent), used, std::move(err));
      });
}

void send(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w, placed_item item) {
  std::visit([&](const auto& of) { send_item(self, req, of, w, std::move(item)); }, req->items);
}

// -- the requests' segments ---------------------------------------------------------

/// How many segments of an LPT-placed request each worker holds at once:
/// the one it serves and those it writes to its child ahead (`write_ahead`
/// in sprint_worker_state.hpp), so that it never waits for the pool between
/// two segments. The lists are assigned up front, so holding more does not
/// change which worker computes what.
constexpr size_t segments_ahead = 4;

/// The pool's retry limits: resends as its source allows; reroutes enough
/// for a segment to try every worker twice, plus the resends.
retry_limits limits_of(pool_pointer self) {
  const auto& source = self->state.source;
  return {2 * source.capacity + source.max_resends, source.max_resends};
}

/// The error of a segment whose worker terminated under it once more after
/// `resends` resends.
caf::error workers_kept_terminating(pool_pointer self, size_t resends) {
  return make_error(errc::child_failed, self->state.label + ": the worker serving it terminated " +
                                            std::to_string(resends + 1) + " times (resent " +
                                            std::to_string(resends) +
                                            " times, the most the worker source allows)");
}

/// Applies the failure policy to a segment that worker `w`, `used`, failed
/// with `err`: counts the retry into `counts`, gives the slot a new worker
/// if `used` was gone (unless the down message did that already), and
/// replaces `err` when the segment's workers kept terminating (then
/// `from_pool` is set).
after_failure apply_failure_policy(pool_pointer self, size_t w, const sprint_worker_actor& used,
                                   caf::error& err, retry_counts& counts, bool& from_pool) {
  auto verdict = decide_after_failure(err, counts, limits_of(self));
  if (err == caf::sec::request_receiver_down && self->state.workers[w].handle == used)
    start_worker(self, w);
  from_pool = verdict.kept_terminating;
  if (verdict.kept_terminating)
    err = workers_kept_terminating(self, counts.resends);
  return verdict.action;
}

/// Gives `req` a list and a count of outstanding segments per worker, for
/// `workers` workers.
void ensure_lists(pool_request& req, size_t workers) {
  if (req.lists.size() < workers)
    req.lists.resize(workers);
  req.outstanding.resize(req.lists.size(), 0);
}

/// Sends worker `w` segments of its list until it holds `segments_ahead`
/// per request it computes at once.
void send_next(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w) {
  if (w >= req->lists.size())
    return;
  size_t ahead = segments_ahead * std::max<size_t>(slot_state(self, w).parallelism, 1);
  auto& list = req->lists[w];
  while (req->outstanding[w] < ahead && !list.empty()) {
    auto segment = std::move(list.front());
    list.pop_front();
    send(self, req, w, std::move(segment));
  }
}

/// Fails `segments` of `req` all with `err` (the request's error reports
/// it once for all of them). Returns whether that finished the request.
bool fail_segments(pool_pointer self, const std::shared_ptr<pool_request>& req,
                   const std::vector<placed_item>& segments, const caf::error& err) {
  for (const auto& segment : segments)
    item_failed(self, *req, segment.index, err, true);
  req->pending -= segments.size();
  if (req->pending > 0)
    return false;
  finish(self, req);
  return true;
}

/// How often parked segments look for a slot that came back.
constexpr std::chrono::milliseconds slot_check_interval{50};

/// Starts the `slot_check_atom` timer unless it runs.
void schedule_slot_check(pool_pointer self) {
  auto& st = self->state;
  if (st.slot_check_scheduled)
    return;
  st.slot_check_scheduled = true;
  self->delayed_send(self, std::min(slot_check_interval, st.source.slot_wait),
                     slot_check_atom::value);
}

/// `segments` of `req`, for which no worker is available: parked to wait
/// for a slot to come back (`worker_source::slot_wait`), or failed at once
/// without a wait, with an error listing the unavailable workers. Returns
/// whether that finished the request.
bool park_or_fail(pool_pointer self, const std::shared_ptr<pool_request>& req,
                  std::vector<placed_item> segments) {
  auto& st = self->state;
  if (st.source.slot_wait.count() <= 0 || !any_worker_may_return(self))
    return fail_segments(self, req, segments, no_worker_available(self));
  auto now = std::chrono::steady_clock::now();
  for (auto& segment : segments)
    st.parked.push_back({req, std::move(segment), now});
  schedule_slot_check(self);
  return false;
}

/// Spreads `segments` (assigned to nobody, or to a worker they leave) over
/// the workers' lists by LPT and sends each worker what it can hold. If no
/// worker is available, they are parked (`park_or_fail`).
void place(pool_pointer self, const std::shared_ptr<pool_request>& req,
           std::vector<placed_item> segments) {
  std::vector<int64_t> weights;
  for (auto& segment : segments) {
    segment.held.withdraw();
    weights.push_back(item_weight(*req, segment.index));
  }
  auto lists = lpt_lists(self, weights);
  // Other requests may have made workers since this one started.
  ensure_lists(*req, lists.size());
  bool placed = false;
  for (size_t w = 0; w < lists.size(); ++w)
    for (size_t k : lists[w]) {
      placed = true;
      segments[k].held = assign(self, w, weights[k]);
      req->lists[w].push_back(std::move(segments[k]));
    }
  if (!placed && !segments.empty() && park_or_fail(self, req, std::move(segments)))
    return;
  for (size_t w = 0; w < req->lists.size(); ++w)
    send_next(self, req, w);
}

/// Puts `segment` of `req` first in the pool's queue again.
void requeue(pool_pointer self, const std::shared_ptr<pool_request>& req, placed_item segment) {
  self->state.waiting.push_front({req, std::move(segment)});
  serve_waiting(self);
}

bool drop_if_abandoned(pool_pointer self, pool_request& req, size_t w, placed_item& sent,
                       uint64_t worker_request, bool computed) {
  req.at_workers.erase(worker_request);
  if (!req.abandoned)
    return false;
  --req.outstanding[w];
  if (computed)
    sent.held.release();
  else
    sent.held.withdraw();
  serve_waiting(self);
  return true;
}

void item_done(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
               placed_item& sent) {
  --req->outstanding[w];
  sent.held.release();
  serve_waiting(self);
  if (--req->pending == 0)
    finish(self, req);
  else
    send_next(self, req, w);
}

// A single request's segment waits first in the pool's queue again. Of a
// batch, a resent segment goes first in `w`'s list, still assigned, for the
// worker replacing it; a rerouted one is placed again with the rest of `w`'s
// list (its worker is unavailable for those too).
void item_error(pool_pointer self, const std::shared_ptr<pool_request>& req, size_t w,
                placed_item sent, const sprint_worker_actor& used, caf::error err) {
  bool from_pool = false;
  auto action = apply_failure_policy(self, w, used, err, sent.retries, from_pool);
  if (action == after_failure::fail) {
    item_failed(self, *req, sent.index, std::move(err), from_pool);
    item_done(self, req, w, sent);
    return;
  }
  --req->outstanding[w];
  if (req->shape == request_shape::single) {
    // A rerouted segment was not computed; a resent one may have been.
    if (action == after_failure::reroute)
      sent.held.withdraw();
    else
      sent.held.release();
    requeue(self, req, std::move(sent));
    return;
  }
  if (action == after_failure::resend) {
    req->lists[w].push_front(std::move(sent));
    send_next(self, req, w);
    return;
  }
  std::vector<placed_item> moved;
  moved.push_back(std::move(sent));
  for (auto& queued : req->lists[w])
    moved.push_back(std::move(queued));
  req->lists[w].clear();
  place(self, req, std::move(moved));
}

} // namespace

void pool_request::cancel(const caf::error& err) {
  abandoned = true;
  for (auto& list : lists) {
    for (auto& segment : list)
      segment.held.withdraw();
    list.clear();
  }
  std::visit(
      [](const auto& of) {
        for (const auto& work : of.work)
          entry_of<decltype(of)>::close(work);
      },
      items);
  answer.cancelled(err);
}

void cancel_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                    const caf::error& err) {
  req->cancel(err);
  for (auto& [worker_request, worker] : req->at_workers)
    self->send(worker, cancel_atom::value, worker_request);
  auto& waiting = self->state.waiting;
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(),
                               [&](const waiting_item& x) { return x.request == req; }),
                waiting.end());
  auto& parked = self->state.parked;
  parked.erase(std::remove_if(parked.begin(), parked.end(),
                              [&](const parked_item& x) { return x.request == req; }),
               parked.end());
}

void start_request(pool_pointer self, const std::shared_ptr<pool_request>& req,
                   request_shape shape) {
  auto& st = self->state;
  const size_t size = req->size();
  req->shape = shape;
  req->pending = size;
  if (shape == request_shape::single) {
    for (size_t i = 0; i < size; ++i)
      st.waiting.push_back({req, placed_item{i, {}, {}}});
    serve_waiting(self);
    return;
  }
  ensure_workers(self, size);
  ensure_lists(*req, st.workers.size());
  std::vector<placed_item> segments(size);
  for (size_t i = 0; i < segments.size(); ++i)
    segments[i].index = i;
  place(self, req, std::move(segments));
}

void serve_waiting(pool_pointer self) {
  auto& st = self->state;
  while (!st.waiting.empty()) {
    if (st.waiting.front().request->abandoned) {
      st.waiting.pop_front();
      continue;
    }
    auto idle = idle_worker(self);
    if (!idle) {
      // Busy workers will take them; unavailable ones would not.
      if (!any_worker_available(self)) {
        auto unplaced = std::move(st.waiting);
        st.waiting.clear();
        for (auto& entry : unplaced) {
          if (entry.request->abandoned)
            continue;
          std::vector<placed_item> segments;
          segments.push_back(std::move(entry.item));
          park_or_fail(self, entry.request, std::move(segments));
        }
      }
      return;
    }
    auto entry = std::move(st.waiting.front());
    st.waiting.pop_front();
    auto& req = entry.request;
    entry.item.held = assign(self, *idle, item_weight(*req, entry.item.index));
    ensure_lists(*req, st.workers.size());
    send(self, req, *idle, std::move(entry.item));
  }
}

void check_parked(pool_pointer self) {
  auto& st = self->state;
  st.slot_check_scheduled = false;
  auto parked = std::move(st.parked);
  st.parked.clear();
  // Each request's segments together, in the order they were parked.
  std::vector<std::pair<std::shared_ptr<pool_request>, std::vector<placed_item>>> requests;
  auto segments_of = [&](const std::shared_ptr<pool_request>& req) -> auto& {
    for (auto& [r, segments] : requests)
      if (r == req)
        return segments;
    return requests.emplace_back(req, std::vector<placed_item>{}).second;
  };
  if (any_worker_available(self)) {
    for (auto& entry : parked) {
      if (entry.request->abandoned)
        continue;
      if (entry.request->shape == request_shape::single)
        st.waiting.push_back({entry.request, std::move(entry.item)});
      else
        segments_of(entry.request).push_back(std::move(entry.item));
    }
    for (auto& [req, segments] : requests)
      place(self, req, std::move(segments));
    serve_waiting(self);
  } else {
    // Waiting is over for those that waited `slot_wait`, and for all once
    // no slot may come back.
    auto now = std::chrono::steady_clock::now();
    const bool may_return = any_worker_may_return(self);
    for (auto& entry : parked) {
      if (entry.request->abandoned)
        continue;
      if (may_return && now - entry.since < st.source.slot_wait)
        st.parked.push_back(std::move(entry));
      else
        segments_of(entry.request).push_back(std::move(entry.item));
    }
    auto err =
        no_worker_available(self, may_return ? st.source.slot_wait : std::chrono::milliseconds{0});
    for (auto& [req, segments] : requests)
      fail_segments(self, req, segments, err);
  }
  if (!st.parked.empty())
    schedule_slot_check(self);
}

} // namespace sprintrt::detail
