#pragma once

/// @file
/// The pool's worker slots: making and replacing their workers, what the
/// pool saw of each, which can take requests (slot states of sources whose
/// workers come and go), their loads and the LPT lists by their rates.
/// Internal to the actors library; the dispatcher (`pool_dispatch`) places
/// requests' items on them.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <caf/error.hpp>

#include "actors/pool/pool_assignment.hpp"
#include "actors/pool/worker_pool.hpp"
#include "common/span.hpp"
#include "sprintrt/worker_interface.hpp"
#include "sprintrt/worker_source.hpp"

namespace sprintrt::detail {

/// Makes the worker of slot `index` from the source (first use, or replacing
/// one that terminated; the slot's load stays, and what the pool saw of the
/// old worker moves into the slot's `replaced` counters, with one restart).
/// The pool monitors it.
void start_worker(pool_pointer self, size_t index);

/// Counts an answer of worker `used`, in slot `w`, into what the pool saw of
/// the slot's workers (`worker_slot::seen`, or `replaced` for a late answer
/// of a worker replaced meanwhile): served if `err` is null, else failed,
/// unless `err` says the worker was gone (the request is resent) or that
/// the request was cancelled (neither kind of worker counts those).
void count_answer(pool_pointer self, size_t w, const sprint_worker_actor& used,
                  const caf::error* err);

/// Creates workers until there are `count` (at most the source's capacity).
void ensure_workers(pool_pointer self, size_t count);

/// Returns slot `index`'s state (see `worker_source::slot_state`; the
/// default for sources without).
worker_slot_state slot_state(pool_pointer self, size_t index);

/// Returns whether some unavailable slot may come back (its cause is not
/// `lasting`).
bool any_worker_may_return(pool_pointer self);

/// Returns whether some worker can take requests now.
bool any_worker_available(pool_pointer self);

/// The error of a request that no worker can take (after waiting `waited`
/// for one to come back): each unavailable slot and why.
caf::error no_worker_available(pool_pointer self, std::chrono::milliseconds waited = {});

/// Returns an idle worker (the lowest index), creating one while fewer than
/// the source's capacity exist; none if all are busy. With slot states, a
/// worker is idle while it holds fewer requests than its parallelism, and
/// an unavailable one never is.
std::optional<size_t> idle_worker(pool_pointer self);

/// Counts a segment of weight `frames` into worker `index`'s load.
assignment assign(pool_pointer self, size_t index, int64_t frames);

/// Spreads segments of `lengths` frames over the workers by LPT, counting
/// what they have assigned already; creates workers as needed. With slot
/// states, by estimated finish time over the available workers (see
/// `slot_rates`). Returns each worker's list of segment indices (not
/// assigned yet); all empty if no worker is available.
std::vector<std::vector<size_t>> lpt_lists(pool_pointer self, span<const int64_t> lengths);

} // namespace sprintrt::detail
