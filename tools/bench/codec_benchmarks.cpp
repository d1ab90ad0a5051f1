// The parent's side of the wire codec for one loss request and its reply,
// each operation against a memcpy of the same bytes (BENCHMARKS.md, "Codec").

#include <algorithm>
#include <cstring>
#include <functional>

#include "criterion/random_posteriors.hpp"
#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tools/bench/bench.hpp"

namespace sprintrt::bench {

namespace {

using protocol::byte_buffer;

// A request is encoded from column 1 of a [T, 4, D] batch; a reply arrives
// in chunks of 64 KiB, as the io thread commits pipe reads.
constexpr size_t batch_size = 4;
constexpr size_t batch_index = 1;
constexpr size_t chunk_size = 64 * 1024;
const std::string segment_name = "corpus/recording/segment-0001";

// Everything one shape needs, allocated and touched once.
struct codec_rig {
  codec_rig(size_t frames, size_t dim)
      : frames(frames), dim(dim), input(criterion::random_log_posteriors(frames, dim, 1)),
        batch(frames * batch_size * dim, 0.0f), dest(frames * dim, 0.0f),
        batch_dest(frames * batch_size * dim, 0.0f) {
    for (size_t t = 0; t < frames; ++t)
      std::copy_n(input.data() + t * dim, dim, strided_input() + t * batch_size * dim);
    check(protocol::encode_loss_reply(reply_wire, {}, 12.5, frames, dim, input.data()),
          "encode_loss_reply");
    reply_body->append(reply_wire.bytes().subspan(4));
    decoded = unwrap(protocol::decode_loss_reply(unwrap(read_reply(), "read_pickle"), frames, dim),
                     "decode_loss_reply")
                  .error_signal;
    encode(out, input.data(), dim);
    decode(decoder, dest.data(), dim);
    if (dest != input)
      throw std::runtime_error("the decoded error signal differs from what was encoded");
    copy_src.assign(std::max(out.size(), reply_wire.size()), 1);
    copy_dst.assign(copy_src.size(), 0);
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
  // memcpy's source and destination, as large as the larger message.
  std::vector<char> copy_src;
  std::vector<char> copy_dst;
  byte_buffer out;
  byte_buffer reply_wire;
  std::shared_ptr<byte_buffer> reply_body = std::make_shared<byte_buffer>();
  protocol::ndarray decoded;
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
};

// An operation: its name (without the shape), whether it moves the request
// (else the reply), and the call.
struct operation {
  std::string name;
  bool request;
  std::function<void(codec_rig&)> call;
};

void copy_bytes(codec_rig& r, size_t n) {
  std::memcpy(r.copy_dst.data(), r.copy_src.data(), n);
  benchmark::DoNotOptimize(r.copy_dst.data());
  benchmark::ClobberMemory();
}

const std::vector<operation> operations{
    {"baseline/memcpy_request", true, [](codec_rig& r) { copy_bytes(r, r.out.size()); }},
    {"baseline/memcpy_reply", false, [](codec_rig& r) { copy_bytes(r, r.reply_wire.size()); }},
    {"codec/encode_request", true,
     [](codec_rig& r) { r.encode(r.out, r.strided_input(), batch_size * r.dim); }},
    {"codec/encode_request_contiguous", true,
     [](codec_rig& r) { r.encode(r.out, r.input.data(), r.dim); }},
    {"codec/encode_request_fresh", true,
     [](codec_rig& r) {
       byte_buffer fresh;
       r.encode(fresh, r.strided_input(), batch_size * r.dim);
     }},
    {"codec/frame_reply", false, [](codec_rig& r) { r.decoder.recycle(r.frame(r.decoder)); }},
    {"codec/unpickle_reply", false,
     [](codec_rig& r) {
       auto value = unwrap(r.read_reply(), "read_pickle");
       benchmark::DoNotOptimize(
           unwrap(protocol::decode_loss_reply(value, r.frames, r.dim), "decode_loss_reply"));
     }},
    {"codec/copy_rows_reply", false,
     [](codec_rig& r) {
       protocol::copy_rows(r.decoded, r.strided_dest(), batch_size * r.dim);
       benchmark::DoNotOptimize(r.batch_dest.data());
     }},
    {"codec/decode_reply", false,
     [](codec_rig& r) { r.decode(r.decoder, r.strided_dest(), batch_size * r.dim); }},
    {"codec/decode_reply_contiguous", false,
     [](codec_rig& r) { r.decode(r.decoder, r.dest.data(), r.dim); }},
    {"codec/decode_reply_fresh", false,
     [](codec_rig& r) {
       protocol::frame_decoder decoder{protocol::framing::length_prefixed};
       std::vector<float> dest(r.frames * batch_size * r.dim);
       r.decode(decoder, dest.data() + batch_index * r.dim, batch_size * r.dim);
     }},
};

} // namespace

void register_codec_benchmarks() {
  for (auto [frames, dim] : std::vector<std::pair<size_t, size_t>>{
           {3, 4}, {100, 40}, {150, 28}, {500, 211}, {1000, 12001}}) {
    const std::string shape = shape_name({{"T", frames}, {"D", dim}});
    for (const auto& op : operations) {
      auto body = [op, frames = frames, dim = dim](bench_state& state) {
        auto& r =
            world().rig<codec_rig>("codec " + std::to_string(frames) + "x" + std::to_string(dim),
                                   [&] { return std::make_unique<codec_rig>(frames, dim); });
        run_warm(state, [&] { op.call(r); }); // buffers grow once: steady state after
        const size_t bytes = op.request ? r.out.size() : r.reply_wire.size();
        state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
      };
      add_benchmark(op.name + "/" + shape, benchmark::kNanosecond, timing::cpu, body);
    }
    const std::string text = " (" + shape_text({{"T", frames}, {"D", dim}}) + ")";
    declare_figure("request encode from a batch slice" + text, "us/request",
                   "codec/encode_request/" + shape, "baseline/memcpy_request/" + shape);
    declare_figure("reply decode into a batch slice" + text, "us/reply",
                   "codec/decode_reply/" + shape, "baseline/memcpy_reply/" + shape);
    declare_figure("reply decode with fresh buffers" + text, "us/reply",
                   "codec/decode_reply_fresh/" + shape, "codec/decode_reply/" + shape);
  }
}

} // namespace sprintrt::bench
