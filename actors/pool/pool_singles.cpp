#include "actors/pool/pool_singles.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "actors/pool/pool_dispatch.hpp"
#include "sprintrt/error.hpp"

namespace sprintrt::detail {

namespace {

/// A request of one segment: its reply or error goes to its caller as is;
/// an error of the pool's own names the segment.
template <class Kind>
struct single_request final : kind_request<Kind> {
  using reply_type = typename Kind::reply_type;

  single_request(typename Kind::work work, caf::typed_response_promise<reply_type> promise)
      : kind_request<Kind>(placement::when_idle, 1), work_(std::move(work)),
        promise_(std::move(promise)) {}

  typename Kind::work work(size_t) const override { return work_; }

  void store(size_t, reply_type reply) override { reply_ = std::move(reply); }

  void record_failure(size_t, const caf::error& err, bool from_pool) override {
    error_ = from_pool ? with_context(Kind::subject(work_), err) : err;
  }

  void finish(pool_pointer self) override {
    self->state.untrack(this->id);
    if (error_)
      promise_.deliver(error_);
    else
      promise_.deliver(std::move(*reply_));
  }

  void answer_cancelled(const caf::error& err) override {
    Kind::close(work_);
    promise_.deliver(err);
  }

private:
  typename Kind::work work_;
  caf::typed_response_promise<reply_type> promise_;
  std::optional<reply_type> reply_;
  caf::error error_;
};

} // namespace

template <class Kind>
caf::result<typename Kind::reply_type> serve_single(pool_pointer self, typename Kind::work work) {
  // The origin first: making the promise takes the sender out of the message.
  auto origin = request_origin::current(self);
  auto promise = self->make_response_promise<typename Kind::reply_type>();
  auto req = std::make_shared<single_request<Kind>>(std::move(work), promise);
  track_request(self, req, std::move(origin));
  start_request(self, req);
  return promise;
}

template caf::result<loss_kind::reply_type> serve_single<loss_kind>(pool_pointer, loss_kind::work);
template caf::result<fsa_kind::reply_type> serve_single<fsa_kind>(pool_pointer, fsa_kind::work);

} // namespace sprintrt::detail
