// The parent's side of the wire codec for one loss request and its reply,
// float32 [T, D], each operation next to a memcpy of the same bytes: the
// request's encode (from a strided slice of a [T, 4, D] batch, as the worker
// reads a batch, and from a contiguous [T, D]), the reply's framing (fed in
// 64 KiB chunks, as the io thread commits pipe reads), unpickle, copy_rows
// into the batch, and the whole decode. Buffers are reused as the runtime
// reuses them; the "fresh" variants allocate a new message buffer, decoder
// and destination per call.

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/random_posteriors.hpp"
#include "tools/bench/bench_support.hpp"
#include "tools/bench/bench_world.hpp"
#include "tools/bench/benchmarks.hpp"
#include "tools/bench/figure_table.hpp"

namespace sprintrt::bench {

namespace {

using protocol::byte_buffer;

constexpr size_t batch_size = 4;
constexpr size_t batch_index = 1;
constexpr size_t chunk_size = 64 * 1024;
const std::string segment_name = "corpus/recording/segment-0001";

// Everything one shape needs, allocated and touched once.
struct codec_rig {
  codec_rig(size_t frames, size_t dim) : frames(frames), dim(dim) {
    input = sim::random_log_posteriors(frames, dim, 1);
    batch.assign(frames * batch_size * dim, 0.0f);
    for (size_t t = 0; t < frames; ++t)
      std::copy_n(input.data() + t * dim, dim, strided_input() + t * batch_size * dim);
    dest.assign(frames * dim, 0.0f);
    batch_dest.assign(frames * batch_size * dim, 0.0f);
    check(protocol::encode_loss_reply(reply_wire, {}, 12.5, frames, dim, input.data()),
          "encode_loss_reply");
    reply_body = std::make_shared<byte_buffer>();
    reply_body->append(reply_wire.bytes().subspan(4));
    decoded = unwrap(protocol::decode_loss_reply(unwrap(read_reply(), "read_pickle"), frames, dim),
                     "decode_loss_reply")
                  .error_signal;
    encode(out, input.data(), dim);
    request_size = out.size();
    decode(decoder, dest.data(), dim);
    if (dest != input)
      throw std::runtime_error("the decoded error signal differs from what was encoded");
  }

  float* strided_input() { return batch.data() + batch_index * dim; }
  float* strided_dest() { return batch_dest.data() + batch_index * dim; }

  caf::expected<protocol::value> read_reply() const {
    return protocol::read_pickle(std::shared_ptr<const byte_buffer>{reply_body});
  }

  void encode(byte_buffer& into, const float* data, size_t row_stride) {
    into.clear();
    check(protocol::encode_loss_command(into, {}, segment_name, frames, dim, data, row_stride),
          "encode_loss_command");
    benchmark::DoNotOptimize(into.data());
  }

  byte_buffer frame(protocol::frame_decoder& with) {
    auto wire = reply_wire.bytes();
    for (size_t pos = 0; pos < wire.size(); pos += chunk_size)
      check(with.feed(wire.subspan(pos, std::min(chunk_size, wire.size() - pos))), "feed");
    auto message = with.next();
    if (!message)
      throw std::runtime_error("the decoder completed no message");
    return std::move(*message);
  }

  // What the worker does with a received reply: decode in place, copy the
  // error signal out, hand the buffer back to the decoder.
  void decode(protocol::frame_decoder& with, float* into, size_t row_stride) {
    auto buffer = std::make_shared<byte_buffer>(frame(with));
    {
      auto value =
          unwrap(protocol::read_pickle(std::shared_ptr<const byte_buffer>{buffer}), "read_pickle");
      auto reply = unwrap(protocol::decode_loss_reply(value, frames, dim), "decode_loss_reply");
      protocol::copy_rows(reply.error_signal, into, row_stride);
    }
    benchmark::DoNotOptimize(into);
    if (buffer.use_count() == 1)
      with.recycle(std::move(*buffer));
  }

  size_t frames;
  size_t dim;
  std::vector<float> input;
  std::vector<float> batch;
  std::vector<float> dest;
  std::vector<float> batch_dest;
  byte_buffer out;
  size_t request_size = 0;
  byte_buffer reply_wire;
  std::shared_ptr<byte_buffer> reply_body;
  protocol::ndarray decoded;
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
};

codec_rig& rig_for(size_t frames, size_t dim) {
  return world().rig<codec_rig>("codec " + std::to_string(frames) + "x" + std::to_string(dim),
                                [&] { return std::make_unique<codec_rig>(frames, dim); });
}

// One operation: its name, whether it moves the request (else the reply),
// and the call.
struct operation {
  std::string name;
  bool request;
  std::function<void(codec_rig&)> call;
};

std::vector<operation> operations() {
  return {
      {"encode_request", true,
       [](codec_rig& r) { r.encode(r.out, r.strided_input(), batch_size * r.dim); }},
      {"encode_request_contiguous", true,
       [](codec_rig& r) { r.encode(r.out, r.input.data(), r.dim); }},
      {"encode_request_fresh", true,
       [](codec_rig& r) {
         byte_buffer fresh;
         r.encode(fresh, r.strided_input(), batch_size * r.dim);
       }},
      {"frame_reply", false, [](codec_rig& r) { r.decoder.recycle(r.frame(r.decoder)); }},
      {"unpickle_reply", false,
       [](codec_rig& r) {
         auto value = unwrap(r.read_reply(), "read_pickle");
         benchmark::DoNotOptimize(
             unwrap(protocol::decode_loss_reply(value, r.frames, r.dim), "decode_loss_reply"));
       }},
      {"copy_rows_reply", false,
       [](codec_rig& r) {
         protocol::copy_rows(r.decoded, r.strided_dest(), batch_size * r.dim);
         benchmark::DoNotOptimize(r.batch_dest.data());
       }},
      {"decode_reply", false,
       [](codec_rig& r) { r.decode(r.decoder, r.strided_dest(), batch_size * r.dim); }},
      {"decode_reply_contiguous", false,
       [](codec_rig& r) { r.decode(r.decoder, r.dest.data(), r.dim); }},
      {"decode_reply_fresh", false,
       [](codec_rig& r) {
         protocol::frame_decoder decoder{protocol::framing::length_prefixed};
         std::vector<float> dest(r.frames * batch_size * r.dim);
         r.decode(decoder, dest.data() + batch_index * r.dim, batch_size * r.dim);
       }},
  };
}

void memcpy_bytes(benchmark::State& state, size_t bytes) {
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

} // namespace

void register_codec_benchmarks() {
  // A tiny segment, small ASR-like segments (the transport and CTC batches),
  // a larger inventory, and the 48 MB segments of the large batch.
  const std::vector<std::pair<size_t, size_t>> shapes{
      {3, 4}, {100, 40}, {150, 28}, {500, 211}, {1000, 12001}};
  for (auto [frames, dim] : shapes) {
    const std::string shape = "T:" + std::to_string(frames) + "/D:" + std::to_string(dim);
    const std::string text = "T=" + std::to_string(frames) + ", D=" + std::to_string(dim);
    for (bool request : {true, false})
      add_benchmark("baseline/memcpy_" + std::string{request ? "request" : "reply"} + "/" + shape,
                    [=](benchmark::State& state) {
                      auto& r = rig_for(frames, dim);
                      memcpy_bytes(state, request ? r.request_size : r.reply_wire.size());
                    });
    for (const auto& op : operations())
      add_benchmark("codec/" + op.name + "/" + shape, [=](benchmark::State& state) {
        auto& r = rig_for(frames, dim);
        op.call(r); // buffers grow once: steady state after
        for (auto _ : state)
          op.call(r);
        state.SetBytesProcessed(static_cast<int64_t>(
            state.iterations() * (op.request ? r.request_size : r.reply_wire.size())));
      });
    declare_figure("request encode from a batch slice (" + text + ")", "us/request",
                   "codec/encode_request/" + shape, "baseline/memcpy_request/" + shape);
    declare_figure("reply decode into a batch slice (" + text + ")", "us/reply",
                   "codec/decode_reply/" + shape, "baseline/memcpy_reply/" + shape);
    declare_figure("reply decode with fresh buffers (" + text + ")", "us/reply",
                   "codec/decode_reply_fresh/" + shape, "codec/decode_reply/" + shape);
  }
}

} // namespace sprintrt::bench
