// A deterministic mutation test of everything that reads a peer's bytes:
// bit flips, byte overwrites, truncations and splices of every golden
// vector, and generated memo-sharing amplifications (a string encoded again
// and again, a tuple doubled through the memo), over 100k inputs. Each goes
// through both framings and the pickle reader and, when it decodes, through
// every message decoder. None may crash (the sanitizer build runs this
// too), and none may make the decoders allocate more than a small multiple
// of its size: every byte allocated while decoding is counted.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "protocol/pickle_repr.hpp"
#include "tests/support/golden_vectors.hpp"

using namespace sprintrt;
using namespace sprintrt::protocol;
using test::bytes;
using test::encode_bomb;
using test::golden_vectors;

// -- counting allocations -----------------------------------------------------
//
// Replacing the global operator new is the one way to see every allocation
// the decoders make (containers, strings, shared values, buffers); this test
// binary is the only one that does it.

namespace {

thread_local bool counting = false;
thread_local size_t allocated = 0;

void* allocate(size_t n) {
  if (counting)
    allocated += n;
  if (void* p = std::malloc(n == 0 ? 1 : n))
    return p;
  throw std::bad_alloc{};
}

} // namespace

void* operator new(size_t n) {
  return allocate(n);
}
void* operator new[](size_t n) {
  return allocate(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
// The nothrow forms too, so that every pair allocates and frees alike (the
// sanitizers check that they match).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (counting)
    allocated += n;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace {

using bytes_t = std::vector<std::byte>;

/// What decoding an input cost, and whether anything decoded.
struct outcome {
  size_t allocated = 0;
  size_t decoded = 0;
};

/// Decodes one message every way the runtime and the tools do.
size_t decode_message(byte_span message) {
  auto x = read_pickle(message);
  if (!x)
    return 0;
  (void)repr(*x);
  (void)decode_command(*x);
  (void)decode_init_reply(*x);
  (void)decode_fsa_reply(*x);
  (void)decode_loss_reply(*x, 3, 4);
  return 1;
}

/// Runs `input` through both framings (whole) and as one unframed pickle,
/// counting the bytes allocated meanwhile.
outcome decode_everything(const bytes_t& input) {
  outcome result;
  allocated = 0;
  counting = true;
  for (auto f : {framing::length_prefixed, framing::raw}) {
    frame_decoder decoder{f};
    decoder.expect(max_loss_reply_size(3, 4));
    (void)decoder.feed({input.data(), input.size()});
    while (auto message = decoder.next())
      result.decoded += decode_message(message->bytes());
  }
  result.decoded += decode_message({input.data(), input.size()});
  counting = false;
  result.allocated = allocated;
  return result;
}

/// The allocation bound: linear in the input with a small constant. Real
/// messages use well under it (decoded values, copies of strings, the
/// framing's buffers, error texts); the amplifications that used to get
/// through asked for hundreds of times their size.
size_t allowed(size_t input_size) {
  return 32 * input_size + 256 * 1024;
}

/// A 4-byte little-endian length.
void append_le32(bytes_t& out, uint32_t x) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<std::byte>((x >> (8 * i)) & 0xff));
}

/// t0 = a memoized string; t(i+1) = (t(i), t(i)) through the memo, `levels`
/// times: 2^levels references to one string.
bytes_t doubling(size_t text_size, int levels) {
  bytes_t msg = bytes({0x80, 4, 'X'});
  append_le32(msg, static_cast<uint32_t>(text_size));
  msg.insert(msg.end(), text_size, std::byte{'s'});
  msg.push_back(std::byte{0x94}); // MEMOIZE as 0
  for (int i = 0; i < levels; ++i)
    for (auto b : bytes({'h', i, 'h', i, 0x86, 0x94}))
      msg.push_back(b);
  msg.push_back(std::byte{'.'});
  return msg;
}

/// Frames `pickle` with a length prefix.
bytes_t framed(const bytes_t& pickle) {
  bytes_t out;
  append_le32(out, static_cast<uint32_t>(pickle.size()));
  out.insert(out.end(), pickle.begin(), pickle.end());
  return out;
}

/// Every mutated input, generated from a fixed seed.
class mutations {
public:
  explicit mutations(uint64_t seed) : rng_(seed) {
    for (const auto& v : golden_vectors())
      seeds_.push_back(v.wire);
    // Amplifications, framed and unframed.
    for (int calls : {1, 3, 200})
      for (size_t text : {size_t{100}, size_t{16000}}) {
        seeds_.push_back(encode_bomb(text, calls));
        seeds_.push_back(framed(encode_bomb(text, calls)));
      }
    for (int levels : {3, 20, 60}) {
      seeds_.push_back(doubling(64, levels));
      seeds_.push_back(framed(doubling(64, levels)));
    }
  }

  /// Calls `f(input)` for every mutation.
  template <class F>
  void for_each(F f) {
    for (const auto& s : seeds_) {
      f(s);
      // Every truncation of the small ones, 200 of the large ones.
      const size_t step = std::max<size_t>(1, s.size() / 200);
      for (size_t n = 0; n < s.size(); n += step)
        f(bytes_t(s.begin(), s.begin() + static_cast<ptrdiff_t>(n)));
      // Fewer of each for the one large vector (422 kB): the same budget
      // of bytes decoded as for a 1 kB one.
      const size_t rounds = std::min<size_t>(1500, 1500 * 1024 / std::max<size_t>(s.size(), 1));
      for (size_t i = 0; i < rounds; ++i)
        f(flipped(s));
      for (size_t i = 0; i < rounds; ++i)
        f(overwritten(s));
      for (size_t i = 0; i < rounds / 2; ++i)
        f(spliced(s));
    }
  }

private:
  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>{0, n - 1}(rng_);
  }

  /// 1 to 4 random bit flips.
  bytes_t flipped(const bytes_t& s) {
    bytes_t x = s;
    if (x.empty())
      return x;
    for (size_t k = 1 + below(4); k > 0; --k)
      x[below(x.size())] ^= static_cast<std::byte>(1u << below(8));
    return x;
  }

  /// A byte or a 4-byte run set to a boundary value (0, 0x7f, 0x80, 0xff,
  /// or a random length), where counts and opcodes live.
  bytes_t overwritten(const bytes_t& s) {
    bytes_t x = s;
    if (x.empty())
      return x;
    static const uint8_t edges[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
    size_t at = below(x.size());
    if (below(2) == 0) {
      x[at] = static_cast<std::byte>(edges[below(sizeof edges)]);
    } else {
      uint32_t v = static_cast<uint32_t>(rng_());
      for (size_t i = 0; i < 4 && at + i < x.size(); ++i)
        x[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
    }
    return x;
  }

  /// A prefix of `s` followed by a suffix of another seed (or of `s`).
  bytes_t spliced(const bytes_t& s) {
    const auto& other = seeds_[below(seeds_.size())];
    bytes_t x(s.begin(), s.begin() + static_cast<ptrdiff_t>(below(s.size() + 1)));
    x.insert(x.end(), other.begin() + static_cast<ptrdiff_t>(below(other.size() + 1)), other.end());
    return x;
  }

  std::mt19937_64 rng_;
  std::vector<bytes_t> seeds_;
};

} // namespace

TEST_CASE("100k mutated and amplified messages decode in memory linear in their size") {
  mutations inputs{20261130};
  size_t count = 0;
  size_t decoded = 0;
  size_t over = 0;
  double worst_ratio = 0;
  inputs.for_each([&](const bytes_t& input) {
    ++count;
    auto r = decode_everything(input);
    decoded += r.decoded;
    if (r.allocated > allowed(input.size())) {
      if (over++ < 5)
        UNSCOPED_INFO("input " << count << " of " << input.size() << " bytes allocated "
                               << r.allocated);
    }
    if (input.size() >= 4096)
      worst_ratio = std::max(worst_ratio,
                             static_cast<double>(r.allocated) / static_cast<double>(input.size()));
  });
  INFO(count << " inputs, " << decoded << " decoded messages, worst allocation " << worst_ratio
             << " x the input (inputs of 64 bytes or more)");
  CHECK(count >= 100000);
  // The mutations must reach the decoders, not only fail on the first byte.
  CHECK(decoded >= count / 10);
  CHECK(over == 0);
}

TEST_CASE("the allocation count sees an amplification the bounds would let through") {
  // The counter itself must be able to fail: decoding 40 copies of a
  // 5000-byte string made by hand (no bound applies: each is in the
  // message) allocates more than the bound of a 100-byte input.
  bytes_t big = bytes({0x80, 2, '('});
  for (int i = 0; i < 40; ++i) {
    big.push_back(std::byte{'X'});
    append_le32(big, 5000);
    big.insert(big.end(), 5000, std::byte{'y'});
  }
  big.push_back(std::byte{'t'});
  big.push_back(std::byte{'.'});
  auto r = decode_everything(big);
  CHECK(r.decoded >= 1);
  CHECK(r.allocated > allowed(100));
  CHECK(r.allocated <= allowed(big.size()));
}
