#pragma once

/// @file
/// Access to the golden vectors written by the real Python implementation
/// (tests/data/protocol-vectors: NAME.bin holds the exact bytes of one message
/// on the pipe, vectors.json says what each one means).

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/span.hpp"
#include "protocol/framing.hpp"

namespace sprintrt::test {

/// One golden vector.
struct golden_vector {
  std::string name;
  protocol::framing framing;
  /// The whole .bin file: the framed message.
  std::vector<std::byte> wire;
  /// The typed JSON value from vectors.json.
  nlohmann::json expected;

  /// The pickle inside the frame (the wire bytes minus any length prefix).
  byte_span pickle() const noexcept {
    size_t header = framing == protocol::framing::length_prefixed ? 4 : 0;
    return byte_span{wire.data(), wire.size()}.subspan(header);
  }
};

/// Reads a whole file; fails the test if it cannot.
std::vector<std::byte> read_file(const std::string& path);

/// Loads every vector listed in vectors.json (at least one, or the test fails).
const std::vector<golden_vector>& golden_vectors();

/// Returns the vector called `name`; fails the test if there is none.
const golden_vector& golden(const std::string& name);

/// Returns `x` as a byte span.
inline byte_span bytes_of(const std::vector<std::byte>& x) noexcept {
  return {x.data(), x.size()};
}

/// Makes bytes from a list of small integers, for hand-written pickles.
std::vector<std::byte> bytes(std::initializer_list<int> xs);

/// Makes bytes from text (one byte per char).
std::vector<std::byte> bytes(std::string_view text);

/// A protocol-2 pickle that encodes one memoized `text_size`-byte string
/// with `_codecs.encode(text, 'latin1')` `calls` times through the memo and
/// returns the results as a tuple: about `text_size` bytes of message whose
/// values hold `calls` x `text_size` bytes (the 1 MB pickle that asked for
/// 3 GB, scaled).
std::vector<std::byte> encode_bomb(size_t text_size, int calls);

/// Concatenates byte vectors.
std::vector<std::byte> concat(std::initializer_list<std::vector<std::byte>> parts);

} // namespace sprintrt::test
