#include "sim/fault_injection.hpp"

#include <array>
#include <iterator>
#include <variant>

namespace sprintrt::sim {

namespace {

struct fault_name {
  fault_kind kind;
  const char* name;
};

constexpr std::array<fault_name, 15> fault_names{{
    {fault_kind::none, "none"},
    {fault_kind::crash, "crash"},
    {fault_kind::hang, "hang"},
    {fault_kind::garbage, "garbage"},
    {fault_kind::exit_at_start, "exit-at-start"},
    {fault_kind::no_init_reply, "no-init-reply"},
    {fault_kind::bad_version, "bad-version"},
    {fault_kind::oversized_prefix, "oversized-prefix"},
    {fault_kind::wrong_shape, "wrong-shape"},
    {fault_kind::random, "random"},
    {fault_kind::bomb, "bomb"},
    {fault_kind::shm_outside, "shm-outside"},
    {fault_kind::shm_scribble, "shm-scribble"},
    {fault_kind::shm_shrink, "shm-shrink"},
    {fault_kind::shm_claim, "shm-claim"},
}};

/// Returns whether `request` is a loss request through the shared region.
bool shared_loss(const protocol::command& request) noexcept {
  const auto* loss = std::get_if<protocol::loss_command>(&request);
  return loss && loss->shared_posteriors;
}

/// The body of the garbage reply. 0xff and 0xfe are no pickle opcodes, so
/// Python's unpickler fails with "invalid load key" on the first byte and our
/// reader with an unknown-opcode error; the text helps whoever dumps the pipe.
constexpr std::array<unsigned char, 28> garbage_body{
    0xff, 0xfe, 's', 'p', 'r', 'i', 'n', 't', '-', 's', 'i', 'm', ' ',  'g',
    'a',  'r',  'b', 'a', 'g', 'e', ' ', 'r', 'e', 'p', 'l', 'y', '\n', 0x00};

} // namespace

const char* to_string(fault_kind kind) noexcept {
  for (const auto& entry : fault_names)
    if (entry.kind == kind)
      return entry.name;
  return "?";
}

std::optional<fault_kind> parse_fault_kind(std::string_view name) noexcept {
  for (const auto& entry : fault_names)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

bool counts_requests(fault_kind kind) noexcept {
  return kind == fault_kind::crash || kind == fault_kind::hang || kind == fault_kind::garbage ||
         kind == fault_kind::oversized_prefix || kind == fault_kind::wrong_shape ||
         kind == fault_kind::bomb || kind == fault_kind::shm_outside;
}

const char* to_string(fault_action action) noexcept {
  switch (action) {
  case fault_action::serve:
    return "serve";
  case fault_action::crash:
    return "crash";
  case fault_action::hang:
    return "hang";
  case fault_action::garbage:
    return "garbage";
  case fault_action::oversized_prefix:
    return "oversized-prefix";
  case fault_action::wrong_shape:
    return "wrong-shape";
  case fault_action::slow:
    return "slow";
  case fault_action::bomb:
    return "bomb";
  case fault_action::shm_outside:
    return "shm-outside";
  case fault_action::shm_scribble:
    return "shm-scribble";
  }
  return "?";
}

int64_t fault_injector::init_reply_version() const noexcept {
  return options_.kind == fault_kind::bad_version ? protocol::protocol_version + 1
                                                  : protocol::protocol_version;
}

fault_action fault_injector::on_request(const protocol::command& request) noexcept {
  if (std::holds_alternative<protocol::init_command>(request))
    return options_.kind == fault_kind::no_init_reply ? fault_action::hang : fault_action::serve;
  auto segment = requested_segment(request);
  if (!segment)
    return fault_action::serve;
  if (options_.crash_segment && *segment == *options_.crash_segment)
    return fault_action::crash;
  if (options_.kind == fault_kind::random) {
    ++served_;
    return draw(std::holds_alternative<protocol::loss_command>(request));
  }
  if (options_.kind == fault_kind::shm_scribble && shared_loss(request)) {
    ++served_;
    return fault_action::shm_scribble;
  }
  if (counts_requests(options_.kind) && served_ == options_.after && !garbage_sent_) {
    switch (options_.kind) {
    case fault_kind::crash:
      return fault_action::crash;
    case fault_kind::hang:
      return fault_action::hang;
    case fault_kind::oversized_prefix:
      return fault_action::oversized_prefix;
    case fault_kind::bomb:
      garbage_sent_ = true;
      return fault_action::bomb;
    case fault_kind::wrong_shape:
      // Fires on the next loss request: an FSA request in between is served.
      if (!std::holds_alternative<protocol::loss_command>(request))
        return fault_action::serve;
      garbage_sent_ = true;
      return fault_action::wrong_shape;
    case fault_kind::shm_outside:
      // Fires on the next loss request through the region: others in
      // between are served.
      if (!shared_loss(request))
        return fault_action::serve;
      garbage_sent_ = true;
      return fault_action::shm_outside;
    default:
      garbage_sent_ = true;
      return fault_action::garbage;
    }
  }
  ++served_;
  return fault_action::serve;
}

fault_action fault_injector::draw(bool loss_request) noexcept {
  if (std::uniform_real_distribution<double>{0.0, 1.0}(rng_) >= options_.rate)
    return fault_action::serve;
  static constexpr fault_action faults[] = {fault_action::slow,
                                            fault_action::crash,
                                            fault_action::hang,
                                            fault_action::garbage,
                                            fault_action::oversized_prefix,
                                            fault_action::bomb,
                                            fault_action::wrong_shape};
  // wrong-shape answers loss requests only.
  const size_t choices = loss_request ? std::size(faults) : std::size(faults) - 1;
  auto action = faults[std::uniform_int_distribution<size_t>{0, choices - 1}(rng_)];
  if (action == fault_action::slow)
    slow_delay_ = std::chrono::milliseconds{std::uniform_int_distribution<int>{1, 50}(rng_)};
  return action;
}

std::optional<std::string_view> requested_segment(const protocol::command& request) noexcept {
  if (const auto* loss = std::get_if<protocol::loss_command>(&request))
    return std::string_view{loss->segment_name};
  if (const auto* fsa = std::get_if<protocol::fsa_command>(&request))
    return std::string_view{fsa->text};
  return std::nullopt;
}

void append_garbage_reply(protocol::byte_buffer& out, protocol::framing framing) {
  size_t start = protocol::begin_frame(out, framing);
  out.append(garbage_body.data(), garbage_body.size());
  // The body is far below any size limit: end_frame cannot fail here.
  (void)protocol::end_frame(out, framing, start);
}

void append_oversized_start(protocol::byte_buffer& out, protocol::framing framing) {
  if (framing == protocol::framing::length_prefixed) {
    const unsigned char prefix[4] = {0xff, 0xff, 0xff, 0x7f}; // 2^31 - 1
    out.append(prefix, sizeof prefix);
    // PROTO 2, MARK, then 10 bytes of a BINUNICODE that never ends.
    const unsigned char start[12] = {0x80, 2, '(', 'X', 0xff, 0xff, 0xff, 0x7f, 'o', 'k', 'o', 'k'};
    out.append(start, sizeof start);
    return;
  }
  // PROTO 4, BINBYTES8 of 2^40 bytes, and 6 of them.
  const unsigned char start[16] = {0x80, 4, 0x8e, 0, 0, 0, 0, 0, 1, 0, 0, 'o', 'k', 'o', 'k', 0};
  out.append(start, sizeof start);
}

void append_memo_bomb(protocol::byte_buffer& out, protocol::framing framing, size_t text_size,
                      size_t calls) {
  size_t start = protocol::begin_frame(out, framing);
  auto put = [&out](std::initializer_list<unsigned char> bytes) {
    for (auto b : bytes)
      out.append(&b, 1);
  };
  // PROTO 2; GLOBAL _codecs encode, BINPUT 0, POP; BINUNICODE text,
  // SHORT_BINUNICODE latin1, TUPLE2, BINPUT 1, POP; MARK; then per call
  // BINGET 0, BINGET 1, REDUCE; TUPLE; STOP.
  put({0x80, 2, 'c'});
  const std::string_view global = "_codecs\nencode\n";
  out.append(global.data(), global.size());
  put({'q', 0, '0', 'X'});
  for (int i = 0; i < 4; ++i)
    put({static_cast<unsigned char>((text_size >> (8 * i)) & 0xff)});
  const std::string text(text_size, 'a');
  out.append(text.data(), text.size());
  put({0x8c, 6, 'l', 'a', 't', 'i', 'n', '1', 0x86, 'q', 1, '0', '('});
  for (size_t i = 0; i < calls; ++i)
    put({'h', 0, 'h', 1, 'R'});
  put({'t', '.'});
  // A bomb is built below the configured limit; a larger one is the
  // caller's mistake and is dropped by end_frame.
  (void)protocol::end_frame(out, framing, start);
}

} // namespace sprintrt::sim
