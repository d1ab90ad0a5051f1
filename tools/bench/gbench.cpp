// sprintrt-gbench: the in-process figures under Google Benchmark, each next
// to its baseline (same bytes or same shape), so that repetitions, their
// statistics and JSON output come from the library:
//
//   sprintrt-gbench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//   sprintrt-gbench --benchmark_format=json --benchmark_out=gbench.json
//   sprintrt-gbench --benchmark_filter='Criterion|LogSoftmax'
//
// Pairs (one benchmark and its baseline per shape):
// - BM_EncodeRequest/T/D: the parent's encode of a get_loss_and_error_signal
//   request from a strided slice of a [T, 4, D] batch; BM_MemcpyRequest/T/D
//   copies the same number of bytes.
// - BM_DecodeReply/T/D: the parent's decode of a reply (framing in 64 KiB
//   chunks, unpickle, copy_rows into a strided slice); BM_MemcpyReply/T/D.
// Buffers are warmed up before the timed loop (steady state: the runtime
// reuses them). Debian's libbenchmark prints "Library was built as DEBUG":
// its own build flag, not this program's.
// - BM_Criterion/T/D/L: the simulated Sprint's CTC full-sum loss and error
//   signal of one segment (sim::criterion); BM_LogSoftmaxExp/T/D: one
//   log_softmax + exp pass over the same [T, D], what any trainer does per
//   frame anyway.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "protocol/framing.hpp"
#include "protocol/messages.hpp"
#include "protocol/ndarray_access.hpp"
#include "protocol/pickle_reader.hpp"
#include "sim/corpus.hpp"
#include "sim/criterion.hpp"
#include "sim/ctc_topology.hpp"

namespace {

using sprintrt::protocol::byte_buffer;
using row_matrix = sprintrt::sim::row_matrix_f;

constexpr size_t batch_size = 4;
constexpr size_t batch_index = 1;
constexpr size_t chunk = 64 * 1024;
const std::string segment = "corpus/recording/segment-0001";

void check(const caf::error& err, const char* what) {
  if (err)
    throw std::runtime_error(std::string{what} + ": " + sprintrt::render(err));
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal{-3.0f, 1.0f};
  std::vector<float> values(n);
  for (auto& x : values)
    x = normal(rng);
  return values;
}

size_t frames_of(const benchmark::State& state) {
  return static_cast<size_t>(state.range(0));
}
size_t dim_of(const benchmark::State& state) {
  return static_cast<size_t>(state.range(1));
}

// The request's framed size for [T, D].
size_t request_size(size_t frames, size_t dim) {
  std::vector<float> data(frames * dim);
  byte_buffer out;
  check(sprintrt::protocol::encode_loss_command(out, {}, segment, frames, dim, data.data(), dim),
        "encode_loss_command");
  return out.size();
}

// The reply's framed bytes for [T, D].
byte_buffer reply_wire(size_t frames, size_t dim) {
  auto data = random_values(frames * dim, 2);
  byte_buffer out;
  check(sprintrt::protocol::encode_loss_reply(out, {}, 12.5, frames, dim, data.data()),
        "encode_loss_reply");
  return out;
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

void BM_EncodeRequest(benchmark::State& state) {
  const size_t frames = frames_of(state);
  const size_t dim = dim_of(state);
  // Segment 1 of a time-major [T, 4, D] batch: a strided slice.
  const auto batch = random_values(frames * batch_size * dim, 1);
  byte_buffer out;
  auto encode = [&] {
    out.clear();
    check(sprintrt::protocol::encode_loss_command(
              out, {}, segment, frames, dim, batch.data() + batch_index * dim, batch_size * dim),
          "encode_loss_command");
    benchmark::DoNotOptimize(out.data());
  };
  encode(); // the buffer grows once, as the worker's does: steady state after
  for (auto _ : state)
    encode();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
}

void BM_MemcpyRequest(benchmark::State& state) {
  memcpy_bytes(state, request_size(frames_of(state), dim_of(state)));
}

void BM_DecodeReply(benchmark::State& state) {
  const size_t frames = frames_of(state);
  const size_t dim = dim_of(state);
  const auto wire = reply_wire(frames, dim);
  std::vector<float> batch(frames * batch_size * dim);
  sprintrt::protocol::frame_decoder decoder{sprintrt::protocol::framing::length_prefixed};
  auto decode = [&] {
    auto bytes = wire.bytes();
    for (size_t pos = 0; pos < bytes.size(); pos += chunk)
      check(decoder.feed(bytes.subspan(pos, std::min(chunk, bytes.size() - pos))), "feed");
    auto message = decoder.next();
    if (!message)
      throw std::runtime_error("the decoder completed no message");
    auto buffer = std::make_shared<byte_buffer>(std::move(*message));
    {
      auto value = sprintrt::protocol::read_pickle(std::shared_ptr<const byte_buffer>{buffer});
      if (!value)
        check(value.error(), "read_pickle");
      auto reply = sprintrt::protocol::decode_loss_reply(*value, frames, dim);
      if (!reply)
        check(reply.error(), "decode_loss_reply");
      sprintrt::protocol::copy_rows(reply->error_signal, batch.data() + batch_index * dim,
                                    batch_size * dim);
    }
    benchmark::DoNotOptimize(batch.data());
    if (buffer.use_count() == 1)
      decoder.recycle(std::move(*buffer));
  };
  decode(); // the decoder's buffer grows once and is recycled after
  for (auto _ : state)
    decode();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire.size()));
}

void BM_MemcpyReply(benchmark::State& state) {
  memcpy_bytes(state, reply_wire(frames_of(state), dim_of(state)).size());
}

row_matrix log_posteriors(size_t frames, size_t dim) {
  std::mt19937 rng{20240601};
  std::normal_distribution<float> normal{0.0f, 2.0f};
  row_matrix lp(frames, dim);
  for (Eigen::Index t = 0; t < lp.rows(); ++t) {
    for (Eigen::Index d = 0; d < lp.cols(); ++d)
      lp(t, d) = normal(rng);
    const float max = lp.row(t).maxCoeff();
    lp.row(t).array() -= max + std::log((lp.row(t).array() - max).exp().sum());
  }
  return lp;
}

void BM_Criterion(benchmark::State& state) {
  const size_t frames = frames_of(state);
  const size_t dim = dim_of(state);
  const auto labels = static_cast<size_t>(state.range(2));
  // Labels 1..D-1 without equal neighbours: alignable in L <= T frames.
  std::string text = "bench\t";
  for (size_t i = 0; i < labels; ++i)
    text += std::to_string(1 + (i * 7) % (dim - 1)) + (i + 1 < labels ? " " : "\n");
  auto corpus = sprintrt::sim::corpus::from_string(text);
  if (!corpus)
    check(corpus.error(), "corpus");
  sprintrt::sim::criterion criterion{std::move(*corpus),
                                     std::make_shared<sprintrt::sim::ctc_topology>(0)};
  const auto lp = log_posteriors(frames, dim);
  row_matrix error_signal(frames, dim);
  for (auto _ : state) {
    auto result = criterion.loss_and_error_signal("bench", lp, error_signal);
    if (!result)
      check(result.error(), "criterion");
    benchmark::DoNotOptimize(result->loss);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * frames));
}

void BM_LogSoftmaxExp(benchmark::State& state) {
  const size_t frames = frames_of(state);
  const size_t dim = dim_of(state);
  const auto logits = log_posteriors(frames, dim);
  row_matrix lp(frames, dim);
  row_matrix p(frames, dim);
  for (auto _ : state) {
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
      const float max = logits.row(t).maxCoeff();
      const float log_norm = max + std::log((logits.row(t).array() - max).exp().sum());
      lp.row(t) = logits.row(t).array() - log_norm;
      p.row(t) = lp.row(t).array().exp().matrix();
    }
    benchmark::DoNotOptimize(p.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * frames));
}

// The shapes of `sprintrt-bench all`: a tiny segment (b), small ASR-like
// segments (a, e), a larger inventory, and 48 MB (d).
void codec_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"T", "D"});
  for (auto [frames, dim] : {std::pair{3, 4}, {100, 40}, {150, 28}, {500, 211}, {1000, 12001}})
    b->Args({frames, dim});
}

} // namespace

BENCHMARK(BM_EncodeRequest)->Apply(codec_shapes);
BENCHMARK(BM_MemcpyRequest)->Apply(codec_shapes);
BENCHMARK(BM_DecodeReply)->Apply(codec_shapes);
BENCHMARK(BM_MemcpyReply)->Apply(codec_shapes);
BENCHMARK(BM_Criterion)->ArgNames({"T", "D", "L"})->Args({150, 28, 40})->Args({500, 100, 50});
BENCHMARK(BM_LogSoftmaxExp)->ArgNames({"T", "D"})->Args({150, 28})->Args({500, 100});

BENCHMARK_MAIN();
