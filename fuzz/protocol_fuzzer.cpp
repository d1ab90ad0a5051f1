// libFuzzer target for everything that reads bytes from a Sprint child (or
// a parent): framing, the pickle reader and the typed message decoders.
//
// The input is a byte stream as it would arrive on a pipe. It goes through
// both framings, once whole and once in small pieces (the piece size comes
// from the first byte), and every message that comes out is decoded: as a
// pickle (copying and sharing), then as a command and as each kind of reply,
// and rendered for an error message. Nothing may crash, leak, read out of
// bounds, overflow, or allocate more than libFuzzer's limits allow (run with
// -rss_limit_mb and -malloc_limit_mb: the decoders must stay linear in the
// message size however the bytes claim otherwise).
//
// Build: configure with clang and -DSPRINTRT_FUZZ=ON (see fuzz/README.md).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"

using namespace sprintrt;
using namespace sprintrt::protocol;

namespace {

/// Decodes one complete message every way the runtime and the tools do.
void decode_message(byte_buffer message) {
  auto copied = read_pickle(message.bytes());
  auto shared = read_pickle(std::make_shared<const byte_buffer>(std::move(message)));
  if (static_cast<bool>(copied) != static_cast<bool>(shared))
    __builtin_trap(); // the two readers must agree
  if (!shared)
    return;
  const value& x = *shared;
  (void)repr(x);
  (void)decode_command(x);
  (void)decode_init_reply(x);
  (void)decode_fsa_reply(x);
  // A loss reply is checked against the shape of its request: use the
  // array's own shape when there is one, and a wrong one too.
  size_t frames = 3;
  size_t dim = 4;
  if (x.is(value::kind::tuple) && x.as_items().size() == 3 &&
      x.as_items()[2].is(value::kind::ndarray)) {
    const auto& shape = x.as_items()[2].as_ndarray().shape;
    if (shape.size() == 2) {
      frames = shape[0];
      dim = shape[1];
    }
  }
  (void)decode_loss_reply(x, frames, dim);
  (void)decode_loss_reply(x, frames + 1, dim);
}

/// Splits `data` into messages with `f`, `piece` bytes at a time, with a
/// limit declared for the first reply, and decodes each message.
void run_stream(framing f, const uint8_t* data, size_t size, size_t piece) {
  frame_decoder decoder{f, size_t{1} << 24};
  decoder.expect(max_loss_reply_size(3, 4));
  size_t offset = 0;
  while (offset < size) {
    size_t n = piece < size - offset ? piece : size - offset;
    if (decoder.feed({reinterpret_cast<const std::byte*>(data + offset), n}))
      break;
    while (auto message = decoder.next())
      decode_message(std::move(*message));
    offset += n;
  }
  while (auto message = decoder.next())
    decode_message(std::move(*message));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const size_t piece = 1 + data[0] % 61;
  for (auto f : {framing::length_prefixed, framing::raw}) {
    run_stream(f, data, size, size);
    run_stream(f, data, size, piece);
  }
  // The bytes as one unframed pickle, as `sprintrt pickle-dump` reads a file.
  byte_buffer whole;
  whole.append(data, size);
  decode_message(std::move(whole));
  return 0;
}
