#include "protocol/pickle_scanner.hpp"

#include <catch2/catch.hpp>

#include "tests/support/golden_vectors.hpp"

using namespace sprintrt::protocol;
using sprintrt::errc;
using sprintrt::test::bytes;
using sprintrt::test::golden;

TEST_CASE("the scanner finds STOP without mistaking argument bytes for it") {
  // BINUNICODE 'a.b' holds a '.' (the STOP byte) inside its argument.
  auto message = bytes({0x80, 3, 'X', 3, 0, 0, 0, 'a', '.', 'b', 0x85, '.'});
  pickle_scanner scanner{1000};
  auto end = scanner.scan({message.data(), message.size()});
  REQUIRE(end);
  REQUIRE(*end);
  CHECK(**end == message.size());
}

TEST_CASE("the scanner resumes where it stopped") {
  const auto& v = golden("legacy_c2p_loss_reply");
  pickle_scanner scanner{1 << 20};
  size_t last_position = 0;
  for (size_t n = 1; n < v.wire.size(); ++n) {
    auto end = scanner.scan({v.wire.data(), n});
    REQUIRE(end);
    REQUIRE_FALSE(*end);
    CHECK(scanner.position() >= last_position);
    CHECK(scanner.position() <= n);
    last_position = scanner.position();
  }
  auto end = scanner.scan({v.wire.data(), v.wire.size()});
  REQUIRE(end);
  REQUIRE(*end);
  CHECK(**end == v.wire.size());
  scanner.reset();
  CHECK(scanner.position() == 0);
}

TEST_CASE("the scanner rejects unknown opcodes and oversized messages") {
  pickle_scanner scanner{16};
  auto bad = bytes({0x80, 3, 0xfe});
  CHECK(scanner.scan({bad.data(), bad.size()}).error() == errc::protocol_error);
  pickle_scanner small{16};
  auto big = bytes({0x80, 3, 'B', 20, 0, 0, 0});
  CHECK(small.scan({big.data(), big.size()}).error() == errc::message_too_large);
  pickle_scanner endless{8};
  auto nones = bytes({'N', 'N', 'N', 'N', 'N', 'N', 'N', 'N', 'N'});
  CHECK(endless.scan({nones.data(), nones.size()}).error() == errc::message_too_large);
}
