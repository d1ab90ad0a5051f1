#pragma once

/// @file
/// What the tests of the command entries and of worker requests share: a
/// loss job whose error signal lies in a strided slice, and decoding the
/// single message a test encoded.

#include <catch2/catch.hpp>

#include <memory>
#include <utility>

#include "protocol/byte_buffer.hpp"
#include "protocol/messages.hpp"
#include "protocol/pickle_reader.hpp"
#include "sprintrt/matrix_slice.hpp"
#include "sprintrt/segment_job.hpp"

namespace sprintrt::test {

/// Decodes the single length-prefixed message in `wire`.
inline protocol::value unframe(const protocol::byte_buffer& wire) {
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
  REQUIRE_FALSE(decoder.feed(wire.bytes()));
  auto msg = decoder.next();
  REQUIRE(msg);
  auto x = protocol::read_pickle(std::make_shared<const protocol::byte_buffer>(std::move(*msg)));
  REQUIRE(x);
  return *x;
}

/// A 2 x 3 loss job for segment "seg" whose error signal goes to rows 1 and
/// 3 of a 4 x 3 buffer of -1 (stride 6 = two rows).
inline segment_job job_2x3() {
  segment_job job;
  job.segment = "seg";
  job.log_posteriors = matrix_slice::dense(2, 3);
  job.error_signal = {make_storage(12, -1.0f), 3, 2, 3, 6};
  return job;
}

} // namespace sprintrt::test
