#include "process/reply_reader.hpp"

namespace sprintrt::process {

void reply_reader::expect(size_t max_size) {
  std::lock_guard<std::mutex> guard{handoff_mutex_};
  limits_.push_back(max_size);
}

void reply_reader::recycle(protocol::byte_buffer buffer) {
  std::lock_guard<std::mutex> guard{handoff_mutex_};
  // The decoder keeps one spare; a second covers a message that arrives
  // before the io thread took the first.
  if (recycled_.size() < 2)
    recycled_.push_back(std::move(buffer));
}

caf::error reply_reader::commit(size_t n, const message_handler& on_message) {
  adopt_handoffs();
  return deliver(decoder_.commit(n), on_message);
}

caf::error reply_reader::feed(byte_span bytes, const message_handler& on_message) {
  adopt_handoffs();
  return deliver(decoder_.feed(bytes), on_message);
}

void reply_reader::adopt_handoffs() {
  std::vector<protocol::byte_buffer> returned;
  std::vector<size_t> limits;
  {
    std::lock_guard<std::mutex> guard{handoff_mutex_};
    returned.swap(recycled_);
    limits.swap(limits_);
  }
  for (auto& buffer : returned)
    decoder_.recycle(std::move(buffer));
  for (auto limit : limits)
    decoder_.expect(limit);
}

caf::error reply_reader::deliver(caf::error framing_error, const message_handler& on_message) {
  while (auto message = decoder_.next())
    on_message(std::move(*message));
  return framing_error;
}

} // namespace sprintrt::process
