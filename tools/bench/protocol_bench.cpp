#include "tools/bench/protocol_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "tools/bench/bench_support.hpp"

namespace sprintrt::bench {

namespace {

using protocol::byte_buffer;

// The measured shapes: a tiny segment, an ASR-like one (characters), a larger
// inventory, and 40 MB (a large vocabulary).
struct shape {
  size_t frames;
  size_t dim;
};
const shape shapes[] = {{3, 4}, {150, 28}, {500, 211}, {500, 20000}};

// The strided cases read and write segment 1 of a time-major [T, 4, D] batch.
constexpr size_t batch_size = 4;
constexpr size_t batch_index = 1;

// The decoder is fed in chunks of this size (what one pipe read may return).
constexpr size_t chunk_size = 64 * 1024;

// Each timed run repeats an operation until about this many bytes went
// through, so that sub-microsecond operations are timed over many calls.
constexpr size_t bytes_per_run = 1 << 20;
constexpr size_t max_calls_per_run = 2000;

const std::string segment_name = "corpus/recording/segment-0001";

void check(const caf::error& err, const char* what) {
  if (err)
    throw std::runtime_error(std::string{what} + ": " + render(err));
}

// Everything one shape needs, allocated (and touched) once: the steady-state
// operations reuse it as the runtime reuses its buffers.
struct fixture {
  explicit fixture(shape s) : s(s) {
    std::mt19937 rng{20240601};
    std::normal_distribution<float> normal{-3.0f, 1.0f};
    const size_t n = s.frames * s.dim;
    input.resize(n);
    for (auto& x : input)
      x = normal(rng);
    batch.assign(n * batch_size, 0.0f);
    for (size_t t = 0; t < s.frames; ++t)
      std::memcpy(batch.data() + (t * batch_size + batch_index) * s.dim, input.data() + t * s.dim,
                  s.dim * sizeof(float));
    dest.assign(n, 0.0f);
    batch_dest.assign(n * batch_size, 0.0f);
    check(protocol::encode_loss_command(request, format, segment_name, s.frames, s.dim,
                                        input.data(), s.dim),
          "encode_loss_command");
    check(protocol::encode_loss_reply(reply_wire, format, 12.5, s.frames, s.dim, input.data()),
          "encode_loss_reply");
    // The reply's pickle without its length prefix, as the decoder hands it out.
    reply_body = std::make_shared<byte_buffer>();
    reply_body->append(reply_wire.bytes().subspan(4));
    auto value = protocol::read_pickle(std::shared_ptr<const byte_buffer>{reply_body});
    if (!value)
      throw std::runtime_error("read_pickle: " + render(value.error()));
    auto reply = protocol::decode_loss_reply(*value, s.frames, s.dim);
    if (!reply)
      throw std::runtime_error("decode_loss_reply: " + render(reply.error()));
    decoded = reply->error_signal;
    const size_t largest = std::max(request.size(), reply_wire.size());
    copy_src.assign(largest, std::byte{1});
    copy_dst.assign(largest, std::byte{0});
  }

  shape s;
  protocol::wire_format format;
  std::vector<float> input;
  std::vector<float> batch;
  std::vector<float> dest;
  std::vector<float> batch_dest;
  byte_buffer request;
  byte_buffer reply_wire;
  std::shared_ptr<byte_buffer> reply_body;
  protocol::ndarray decoded;
  protocol::frame_decoder decoder{protocol::framing::length_prefixed};
  std::vector<std::byte> copy_src;
  std::vector<std::byte> copy_dst;
};

void encode(fixture& f, byte_buffer& out, const float* data, size_t row_stride) {
  out.clear();
  check(protocol::encode_loss_command(out, f.format, segment_name, f.s.frames, f.s.dim, data,
                                      row_stride),
        "encode_loss_command");
  keep_alive(out.data());
}

// Feeds the reply in 64 KiB chunks, as the io thread commits pipe reads.
byte_buffer frame(fixture& f, protocol::frame_decoder& decoder) {
  auto wire = f.reply_wire.bytes();
  for (size_t pos = 0; pos < wire.size(); pos += chunk_size)
    check(decoder.feed(wire.subspan(pos, std::min(chunk_size, wire.size() - pos))), "feed");
  auto message = decoder.next();
  if (!message)
    throw std::runtime_error("the decoder completed no message");
  return std::move(*message);
}

// What the worker does with a received reply: decode in place (zero copy),
// copy the error signal out, hand the buffer back to the decoder.
void decode(fixture& f, protocol::frame_decoder& decoder, float* dest, size_t row_stride) {
  auto buffer = std::make_shared<byte_buffer>(frame(f, decoder));
  {
    auto value = protocol::read_pickle(std::shared_ptr<const byte_buffer>{buffer});
    if (!value)
      throw std::runtime_error("read_pickle: " + render(value.error()));
    auto reply = protocol::decode_loss_reply(*value, f.s.frames, f.s.dim);
    if (!reply)
      throw std::runtime_error("decode_loss_reply: " + render(reply.error()));
    protocol::copy_rows(reply->error_signal, dest, row_stride);
  }
  keep_alive(dest);
  if (buffer.use_count() == 1)
    decoder.recycle(std::move(*buffer));
}

// One measured operation of a shape.
struct operation {
  static constexpr size_t steady = static_cast<size_t>(-1);

  operation(std::string op_name, size_t op_bytes, std::function<void()> op_call,
            size_t baseline_index, size_t reused_index = steady)
      : name(std::move(op_name)), bytes(op_bytes), call(std::move(op_call)),
        baseline(baseline_index), reused(reused_index) {}

  std::string name;
  // The message bytes it moves per call (what MB/s and the memcpy count).
  size_t bytes;
  std::function<void()> call;
  // Index of its memcpy baseline in the same list (itself for a baseline).
  size_t baseline;
  // For a fresh-allocation variant: the index of the same operation with
  // reused buffers; otherwise `steady`.
  size_t reused;
  std::vector<double> samples;
};

size_t calls_per_run(size_t bytes) {
  return std::clamp<size_t>(bytes_per_run / std::max<size_t>(bytes, 1), 1, max_calls_per_run);
}

// Runs every operation once to warm up, then `repeat` rounds of one timed run
// of each, interleaved (in a shuffled order per round) so that a noisy moment
// or a cache left cold by the previous operation hits all of them alike.
void run_interleaved(std::vector<operation>& ops, int repeat) {
  for (auto& op : ops)
    op.call();
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::mt19937 rng{7};
  for (int r = 0; r < repeat; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      auto& op = ops[i];
      const size_t calls = calls_per_run(op.bytes);
      const auto start = std::chrono::steady_clock::now();
      for (size_t c = 0; c < calls; ++c)
        op.call();
      op.samples.push_back(micros_since(start) / static_cast<double>(calls));
    }
  }
}

void run_shape(const shape& s, int repeat, std::vector<nlohmann::json>& steady,
               std::vector<nlohmann::json>& fresh) {
  fixture f{s};
  const size_t req = f.request.size();
  const size_t rep = f.reply_wire.size();
  const size_t stride = batch_size * s.dim;
  float* batch_dest = f.batch_dest.data() + batch_index * s.dim;
  auto memcpy_of = [&f](size_t n) {
    return [&f, n] {
      std::memcpy(f.copy_dst.data(), f.copy_src.data(), n);
      keep_alive(f.copy_dst.data());
    };
  };
  byte_buffer out;
  std::vector<operation> ops;
  ops.emplace_back("memcpy", req, memcpy_of(req), 0);
  ops.emplace_back("memcpy", rep, memcpy_of(rep), 1);
  const size_t encode_index = ops.size();
  ops.emplace_back(
      "encode", req, [&] { encode(f, out, f.input.data(), s.dim); }, 0);
  ops.emplace_back(
      "encode_strided", req, [&] { encode(f, out, f.batch.data() + batch_index * s.dim, stride); },
      0);
  ops.emplace_back(
      "frame", rep, [&] { f.decoder.recycle(frame(f, f.decoder)); }, 1);
  ops.emplace_back(
      "unpickle", rep,
      [&] {
        auto value = protocol::read_pickle(std::shared_ptr<const byte_buffer>{f.reply_body});
        if (!value || !protocol::decode_loss_reply(*value, s.frames, s.dim))
          throw std::runtime_error("unpickle failed");
      },
      1);
  ops.emplace_back(
      "copy_rows", rep,
      [&] {
        protocol::copy_rows(f.decoded, f.dest.data(), s.dim);
        keep_alive(f.dest.data());
      },
      1);
  const size_t decode_index = ops.size();
  ops.emplace_back(
      "decode", rep, [&] { decode(f, f.decoder, f.dest.data(), s.dim); }, 1);
  ops.emplace_back(
      "decode_strided", rep, [&] { decode(f, f.decoder, batch_dest, stride); }, 1);
  // Fresh allocations per call: a new message buffer, decoder and destination.
  ops.emplace_back(
      "encode_fresh", req,
      [&] {
        byte_buffer fresh_out;
        encode(f, fresh_out, f.input.data(), s.dim);
      },
      0, encode_index);
  ops.emplace_back(
      "decode_fresh", rep,
      [&] {
        protocol::frame_decoder decoder{protocol::framing::length_prefixed};
        std::vector<float> dest(s.frames * s.dim);
        decode(f, decoder, dest.data(), s.dim);
      },
      1, decode_index);
  run_interleaved(ops, repeat);
  if (!std::equal(f.dest.begin(), f.dest.end(), f.input.begin()))
    throw std::runtime_error("decoded error signal differs from what was encoded");
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto t = summarize(ops[i].samples);
    const auto base = summarize(ops[ops[i].baseline].samples);
    nlohmann::json row = {
        {"T", s.frames},
        {"D", s.dim},
        {"op", ops[i].name},
        {"bytes", ops[i].bytes},
        {"median_us", t.median_us},
        {"min_us", t.min_us},
        {"mb_per_s", megabytes_per_second(static_cast<double>(ops[i].bytes), t.median_us)},
        {"memcpy_mb_per_s",
         megabytes_per_second(static_cast<double>(ops[i].bytes), base.median_us)},
        {"ratio", t.median_us / base.median_us},
        {"ratio_min", t.min_us / base.min_us},
    };
    if (ops[i].reused == operation::steady) {
      steady.push_back(row);
    } else {
      const auto reused = summarize(ops[ops[i].reused].samples);
      row["reused_median_us"] = reused.median_us;
      row["fresh_over_reused"] = t.median_us / reused.median_us;
      fresh.push_back(row);
    }
  }
}

void run_protocol_bench(const bench_options& options) {
  std::vector<nlohmann::json> steady;
  std::vector<nlohmann::json> fresh;
  const std::string load_before = machine_load();
  for (const auto& s : shapes)
    run_shape(s, options.repeat, steady, fresh);
  const std::string runs = std::to_string(options.repeat);
  section steady_section{
      "steady",
      "protocol: loss request/reply codec, float32 [T, D], buffers reused as the runtime "
      "does; median of " +
          runs + " runs; baseline = memcpy of the same bytes, same run",
      {{"T", "T", 5},
       {"D", "D", 7},
       {"op", "op", 16},
       {"bytes", "bytes", 10},
       {"median_us", "median_us", 11},
       {"min_us", "min_us", 10},
       {"mb_per_s", "MB/s", 11},
       {"memcpy_mb_per_s", "memcpy_MB/s", 13},
       {"ratio", "ratio", 8},
       {"ratio_min", "ratio_min", 11}},
      steady,
      {"ratio = median / memcpy median of the same bytes, ratio_min = min / memcpy min (steadier "
       "on a busy machine); 1.0 = one copy. bytes = framed message size; encode = request, the "
       "rest = reply.",
       "encode[_strided]: encode_loss_command into a reused buffer from contiguous [T, D] "
       "(strided: segment 1 of [T, 4, D]).",
       "frame: frame_decoder fed in 64 KiB chunks (its memcpy stands in for the pipe read(2), "
       "which copies anyway); unpickle: read_pickle (shared, zero copy) + decode_loss_reply; "
       "copy_rows: into a [T, D] destination.",
       "decode[_strided] = frame + unpickle + copy_rows (+ recycle): two copies, so ~2.0 is its "
       "floor, 1.0 of which the pipe read pays in the real runtime."}};
  section fresh_section{
      "fresh",
      "protocol: the same with fresh allocations per call (new message buffer, decoder and "
      "zeroed destination), median of " +
          runs + " runs",
      {{"T", "T", 5},
       {"D", "D", 7},
       {"op", "op", 14},
       {"median_us", "median_us", 11},
       {"min_us", "min_us", 10},
       {"mb_per_s", "MB/s", 11},
       {"ratio", "vs_memcpy", 11},
       {"reused_median_us", "reused_us", 11},
       {"fresh_over_reused", "fresh/reused", 14}},
      fresh,
      {"fresh/reused = what not recycling costs (page faults of new buffers; glibc mmaps and "
       "unmaps blocks > 32 MB on each call).",
       "machine at the start: " + load_before + "; at the end: " + machine_load() + "."}};
  report(options, "protocol", {steady_section, fresh_section});
}

} // namespace

void add_protocol_bench(CLI::App& app) {
  auto options = std::make_shared<bench_options>();
  auto* command = app.add_subcommand(
      "protocol", "wire codec throughput for a loss request/reply (float32 [T, D] at 3x4, "
                  "150x28, 500x211, 500x20000) against memcpy of the same bytes");
  add_common_options(*command, *options);
  command->callback([options] { run_protocol_bench(*options); });
}

} // namespace sprintrt::bench
