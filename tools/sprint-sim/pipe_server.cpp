#include "tools/sprint-sim/pipe_server.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "tools/sprint-sim/pipe_io.hpp"

namespace sprintrt::sim_tool {

using sim::sprint_sim_exit;

pipe_server::pipe_server(int p2c_fd, int c2p_fd, sim::sprint_service& service,
                         sim::fault_injector& faults)
    : p2c_fd_(p2c_fd), c2p_fd_(c2p_fd), service_(service), faults_(faults),
      decoder_(service.options().wire.framing, service.options().wire.max_message_size) {}

sprint_sim_exit pipe_server::run() {
  for (;;) {
    if (auto status = handle_pending())
      return *status;
    auto room = decoder_.prepare();
    auto n = read_some(p2c_fd_, room);
    if (!n) {
      spdlog::error("reading requests: {}", render(n.error()));
      return sprint_sim_exit::failure;
    }
    if (*n == 0) {
      if (decoder_.partial_bytes() > 0)
        spdlog::error("the parent closed the request pipe in the middle of a message ({} bytes "
                      "of it received) without sending exit",
                      decoder_.partial_bytes());
      else
        spdlog::error("the parent closed the request pipe without sending exit");
      return sprint_sim_exit::failure;
    }
    if (auto err = decoder_.commit(*n)) {
      // Messages that were complete before the bad bytes are answered first,
      // as a parent reading message by message would see it.
      if (auto status = handle_pending())
        return *status;
      spdlog::error("the request pipe does not carry {} messages: {}",
                    protocol::to_string(decoder_.mode()), render(err));
      return sprint_sim_exit::framing_error;
    }
  }
}

std::optional<sprint_sim_exit> pipe_server::handle_pending() {
  while (auto message = decoder_.next())
    if (auto status = handle(std::move(*message)))
      return status;
  return std::nullopt;
}

std::optional<sprint_sim_exit> pipe_server::handle(protocol::byte_buffer&& message) {
  const auto start = std::chrono::steady_clock::now();
  const size_t number = ++requests_;
  // Decoded arrays point into the message buffer: no copy of the posteriors.
  auto buffer = std::make_shared<protocol::byte_buffer>(std::move(message));
  reply_.clear();
  description_ = "malformed message";
  std::optional<sprint_sim_exit> status;
  {
    auto decoded = protocol::read_pickle(std::shared_ptr<const protocol::byte_buffer>{buffer});
    if (decoded) {
      status = answer(*decoded, number);
    } else {
      spdlog::warn("request {}: not a valid pickle: {}", number, render(decoded.error()));
      service_.reply_error(decoded.error(), reply_);
    }
  }
  // The decoded value is gone: the buffer is ours alone again, reuse it.
  if (buffer.use_count() == 1)
    decoder_.recycle(std::move(*buffer));
  if (status)
    return status;
  if (auto err = write_all(c2p_fd_, reply_.bytes())) {
    spdlog::error("request {}: cannot send the reply: {}", number, render(err));
    return sprint_sim_exit::failure;
  }
  if (scribble_)
    scribble_after_reply(number);
  if (spdlog::should_log(spdlog::level::debug)) {
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    spdlog::debug("request {}: {}: replied {} bytes in {:.3f} ms", number, description_,
                  reply_.size(), took.count());
  }
  return std::nullopt;
}

void pipe_server::try_to_shrink(const protocol::shared_array& reference) {
  auto& region = *service_.region();
  // Mapped first, so that the region has its size from the parent.
  if (!region.view(reference.offset, reference.bytes(), alignof(float)))
    return;
  const int truncated = ::ftruncate(region.fd(), 0);
  spdlog::warn("fault injection: shrinking the shared region of {} bytes to 0 {}", region.size(),
               truncated == 0 ? "succeeded" : std::string{"failed: "} + std::strerror(errno));
  const int sealed = ::fcntl(region.fd(), F_ADD_SEALS, F_SEAL_GROW);
  spdlog::warn("fault injection: sealing the shared region against growing {}",
               sealed == 0 ? "succeeded" : std::string{"failed: "} + std::strerror(errno));
}

void pipe_server::scribble_after_reply(size_t number) {
  const auto reference = *std::exchange(scribble_, std::nullopt);
  if (!service_.region())
    return;
  auto place = service_.region()->view(reference.offset, reference.bytes(), alignof(float));
  if (!place)
    return;
  spdlog::warn("fault injection: writing NaN over the error signal of request {} for {} ms after "
               "replying",
               number, sim::shm_scribble_time.count());
  auto* values = reinterpret_cast<volatile float*>(*place);
  const size_t count = reference.rows * reference.cols;
  const auto until = std::chrono::steady_clock::now() + sim::shm_scribble_time;
  while (std::chrono::steady_clock::now() < until)
    for (size_t i = 0; i < count; i += 7)
      values[i] = std::numeric_limits<float>::quiet_NaN();
}

std::optional<sprint_sim_exit> pipe_server::answer(const protocol::value& message, size_t number) {
  auto request = protocol::decode_command(message);
  if (!request) {
    spdlog::warn("request {}: {}", number, render(request.error()));
    service_.reply_error(request.error(), reply_);
    return std::nullopt;
  }
  if (spdlog::should_log(spdlog::level::debug))
    description_ = sim::describe(*request);
  if (faults_.shrinks_region() && !shrink_tried_ && service_.region()) {
    const auto* loss = std::get_if<protocol::loss_command>(&*request);
    if (loss && loss->shared_posteriors) {
      shrink_tried_ = true;
      try_to_shrink(*loss->shared_posteriors);
    }
  }
  switch (faults_.on_request(*request)) {
  case sim::fault_action::serve:
    if (service_.handle(*request, reply_) == sim::service_action::exit) {
      spdlog::info("request {}: exit", number);
      return sprint_sim_exit::ok;
    }
    break;
  case sim::fault_action::crash:
    spdlog::warn("fault injection: crashing on request {} ({}) with status {}", number,
                 sim::describe(*request), static_cast<int>(sprint_sim_exit::crash));
    return sprint_sim_exit::crash;
  case sim::fault_action::hang:
    spdlog::warn("fault injection: never answering request {} ({})", number,
                 sim::describe(*request));
    sleep_until_killed();
  case sim::fault_action::oversized_prefix: {
    spdlog::warn("fault injection: beginning the reply to request {} ({}) with a length no "
                 "request allows, then stopping",
                 number, sim::describe(*request));
    protocol::byte_buffer start;
    sim::append_oversized_start(start, service_.options().wire.framing);
    if (auto err = write_all(c2p_fd_, start.bytes()))
      spdlog::error("request {}: cannot write the reply's start: {}", number, render(err));
    sleep_until_killed();
  }
  case sim::fault_action::wrong_shape: {
    // `on_request` fires this on loss requests only.
    const auto& loss = std::get<protocol::loss_command>(*request);
    const size_t frames = loss.frames + 1;
    const size_t dim =
        loss.shared_posteriors ? loss.shared_posteriors->cols : loss.log_posteriors.shape[1];
    spdlog::warn("fault injection: answering request {} ({}) with a {} x {} error signal", number,
                 sim::describe(*request), frames, dim);
    std::vector<float> zeros(frames * dim, 0.0f);
    if (auto err = protocol::encode_loss_reply(reply_, service_.options().wire, 0.0, frames, dim,
                                               zeros.data()))
      service_.reply_error(err, reply_);
    break;
  }
  case sim::fault_action::slow:
    std::this_thread::sleep_for(faults_.slow_delay());
    if (service_.handle(*request, reply_) == sim::service_action::exit)
      return sprint_sim_exit::ok; // `exit` is never slowed: not reached
    break;
  case sim::fault_action::bomb:
    spdlog::warn("fault injection: answering request {} ({}) with a memo bomb", number,
                 sim::describe(*request));
    sim::append_memo_bomb(reply_, service_.options().wire.framing, sim::bomb_text_size,
                          sim::bomb_calls);
    break;
  case sim::fault_action::garbage:
    spdlog::warn("fault injection: answering request {} ({}) with garbage", number,
                 sim::describe(*request));
    sim::append_garbage_reply(reply_, service_.options().wire.framing);
    break;
  case sim::fault_action::shm_outside: {
    // `on_request` fires this on loss requests through the region only.
    auto outside = *std::get<protocol::loss_command>(*request).shared_posteriors;
    // Mapping the request first follows the parent's growth: the end is
    // the region's end now.
    if (!service_.region() ||
        !service_.region()->view(outside.offset, outside.bytes(), alignof(float))) {
      service_.handle(*request, reply_); // answered with what is wrong
      break;
    }
    outside.offset = service_.region()->size();
    spdlog::warn("fault injection: answering request {} ({}) with an error signal at offset {}, "
                 "the end of the region",
                 number, sim::describe(*request), outside.offset);
    if (auto err = protocol::encode_loss_reply(reply_, service_.options().wire, 0.0, outside))
      service_.reply_error(err, reply_);
    break;
  }
  case sim::fault_action::shm_scribble:
    service_.handle(*request, reply_);
    scribble_ = std::get<protocol::loss_command>(*request).shared_posteriors;
    break;
  }
  if (sim::requested_segment(*request) && faults_.reply_delay().count() > 0)
    std::this_thread::sleep_for(faults_.reply_delay());
  if (std::holds_alternative<protocol::init_command>(*request) && faults_.init_delay().count() > 0)
    std::this_thread::sleep_for(faults_.init_delay());
  return std::nullopt;
}

} // namespace sprintrt::sim_tool
