#include "tools/bench/bench_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "criterion/ctc_topology.hpp"
#include "criterion/random_posteriors.hpp"
#include "protocol/messages.hpp"
#include "tools/bench/bench_world.hpp"

namespace sprintrt::bench {

namespace {

int failures = 0;

double minimum(const std::vector<double>& xs) {
  return *std::min_element(xs.begin(), xs.end());
}

double maximum(const std::vector<double>& xs) {
  return *std::max_element(xs.begin(), xs.end());
}

} // namespace

[[noreturn]] void throw_error(const std::string& what, const caf::error& err) {
  throw std::runtime_error(what + ": " + render(err));
}

void check(const caf::error& err, const std::string& what) {
  if (err)
    throw_error(what, err);
}

benchmark::internal::Benchmark* add_benchmark(const std::string& name, benchmark::TimeUnit unit,
                                              timing clock,
                                              std::function<void(bench_state&)> body) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [body](bench_state& state) {
    try {
      body(state);
    } catch (const std::exception& e) {
      ++failures;
      state.SkipWithError(e.what());
    }
  });
  if (clock == timing::real)
    b->UseRealTime();
  if (clock == timing::manual)
    b->UseManualTime();
  // Beside the mean, median and deviation: the figures' ranges.
  return b->Unit(unit)->ComputeStatistics("min", minimum)->ComputeStatistics("max", maximum);
}

int benchmark_failures() {
  return failures;
}

double seconds_since(bench_clock::time_point start) {
  return std::chrono::duration<double>(bench_clock::now() - start).count();
}

std::string shape_name(const size_list& sizes) {
  std::string name;
  for (const auto& [letter, n] : sizes)
    name += (name.empty() ? "" : "/") + letter + ":" + std::to_string(n);
  return name;
}

std::string shape_text(const size_list& sizes) {
  std::string text;
  for (const auto& [letter, n] : sizes)
    text += (text.empty() ? "" : ", ") + letter + "=" + std::to_string(n);
  return text;
}

bench_corpus write_corpus(const std::vector<criterion::corpus_entry>& segments) {
  auto dir = runtime::temp_directory::make("sprintrt-bench");
  if (!dir)
    throw_error("temporary directory", dir.error());
  std::string path = dir->path() + "/corpus.txt";
  check(criterion::write_corpus_file(path, segments), "corpus file");
  return {std::move(*dir), std::move(path)};
}

sprint_options sim_options(const std::string& corpus, size_t instances,
                           const std::vector<std::string>& extra) {
  auto word = [](std::string text) {
    return config_word{word_piece{word_piece::literal, std::move(text)}};
  };
  sprint_options opts;
  opts.sprint_exec_path = world().settings().sprint_sim;
  opts.sprint_config = {word("--*.corpus=" + corpus), word("--*.topology=ctc"),
                        word("--*.framing=length_prefixed")};
  for (const auto& text : extra)
    opts.sprint_config.push_back(word(text));
  opts.num_instances = instances;
  opts.init_timeout = std::chrono::seconds{30};
  opts.reply_timeout = std::chrono::seconds{120};
  opts.exit_grace = std::chrono::seconds{5};
  return opts;
}

sim::corpus_criterion load_criterion(const std::string& corpus, sim::criterion_kind kind) {
  return sim::corpus_criterion{unwrap(criterion::corpus::from_file(corpus), "corpus"),
                               std::make_shared<criterion::ctc_topology>(0), kind};
}

std::vector<uint32_t> alignable_labels(size_t count, size_t dim, size_t frames, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> label{1, static_cast<uint32_t>(dim - 1)};
  for (;;) {
    std::vector<uint32_t> labels(count);
    size_t needed = count;
    for (size_t i = 0; i < count; ++i) {
      labels[i] = label(rng);
      needed += i > 0 && labels[i] == labels[i - 1];
    }
    if (needed <= frames)
      return labels;
  }
}

segment_job make_job(const std::string& name, size_t frames, size_t dim, uint64_t seed) {
  auto lp = matrix_slice::dense(frames, dim);
  criterion::fill_random_log_posteriors(lp.storage->data(), frames, dim, seed);
  return {name, lp, matrix_slice::dense(frames, dim)};
}

batch random_batch(const std::vector<int64_t>& lengths, const std::vector<std::string>& tags,
                   size_t dim, uint64_t seed) {
  const auto frames = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  batch b;
  b.log_posteriors = tensor::zeros({frames, tags.size(), dim});
  criterion::fill_random_log_posteriors(b.log_posteriors.data(), frames * tags.size(), dim, seed);
  b.seq_lengths = lengths;
  b.tags = tags;
  return b;
}

std::vector<float> compute_reusing(const pool_client& client, const batch& data, tensor& reuse) {
  batch b{data.log_posteriors, data.seq_lengths, data.tags, std::move(reuse)};
  auto result = unwrap(client.compute(std::move(b)), "batch");
  reuse = std::move(result.error_signal);
  return std::move(result.loss);
}

size_t request_bytes(const std::string& segment, size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, -1.0f);
  protocol::byte_buffer out;
  check(protocol::encode_loss_command(out, {}, segment, frames, dim, data.data(), dim),
        "encode_loss_command");
  return out.size();
}

size_t reply_bytes(size_t frames, size_t dim) {
  std::vector<float> data(frames * dim, 0.0f);
  protocol::byte_buffer out;
  check(protocol::encode_loss_reply(out, {}, 0.0, frames, dim, data.data()), "encode_loss_reply");
  return out.size();
}

void write_fully(int fd, const char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::write(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      throw std::runtime_error(what + ": write: " + std::strerror(errno));
    data += k;
    n -= static_cast<size_t>(k);
  }
}

bool read_fully(int fd, char* data, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t k = ::read(fd, data, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      throw std::runtime_error(what + ": read: " + std::strerror(errno));
    if (k == 0)
      return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

} // namespace sprintrt::bench
