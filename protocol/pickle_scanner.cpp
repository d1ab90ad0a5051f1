#include "protocol/pickle_scanner.hpp"

#include <string>

#include "protocol/pickle_opcodes.hpp"

namespace sprintrt::protocol {

caf::expected<std::optional<size_t>> pickle_scanner::scan(byte_span data) {
  while (position_ < data.size()) {
    if (position_ >= max_size_)
      return make_error(errc::message_too_large, "no STOP within the maximum message size of " +
                                                     std::to_string(max_size_) + " bytes");
    auto instr = measure_instruction(data, position_, max_size_);
    if (!instr)
      return std::move(instr.error());
    if (!instr->complete)
      return std::optional<size_t>{};
    position_ = instr->end;
    if (instr->op->code == op::stop)
      return std::optional<size_t>{position_};
  }
  return std::optional<size_t>{};
}

} // namespace sprintrt::protocol
