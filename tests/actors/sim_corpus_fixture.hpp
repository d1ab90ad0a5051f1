#pragma once

/// @file
/// A corpus file in a temporary directory, the options that run simulated
/// workers on it, and random batches: what the tests of the caller, pool and sources
/// layers share.

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/shell_words.hpp"
#include "criterion/corpus.hpp"
#include "criterion/random_posteriors.hpp"
#include "process/temp_directory.hpp"
#include "sprintrt/batch.hpp"
#include "sprintrt/options.hpp"
#include "sprintrt/sim_worker.hpp"
#include "sprintrt/sprint_runtime.hpp"

namespace sprintrt::test {

/// The corpus `entries` written to `<temporary directory>/corpus.txt`.
class sim_corpus {
public:
  explicit sim_corpus(std::vector<criterion::corpus_entry> entries)
      : dir_(make_dir()), entries_(std::move(entries)) {
    if (auto err = criterion::write_corpus_file(path(), entries_))
      throw std::runtime_error(render(err));
  }

  /// The corpus file's path.
  std::string path() const { return dir_.path() + "/corpus.txt"; }

  /// The corpus as read back from its file.
  criterion::corpus read() const {
    auto segments = criterion::corpus::from_file(path());
    if (!segments)
      throw std::runtime_error(render(segments.error()));
    return std::move(*segments);
  }

  /// Options whose sprintConfigStr names the corpus, followed by the
  /// parameters `params` (split like a shell), for `workers` instances.
  sprint_options options(const std::string& params = "", size_t workers = 1) const {
    sprint_options opts;
    opts.sprint_exec_path = "sprint-sim";
    opts.num_instances = workers;
    auto words = config::split_shell_words("--*.corpus=" + path() + " " + params);
    if (!words)
      throw std::runtime_error(render(words.error()));
    opts.sprint_config = std::move(*words);
    return opts;
  }

  /// A pool of `rt` over simulated workers for `opts`.
  static worker_pool_actor pool(sprint_runtime& rt, const sprint_options& opts,
                                sim_worker_behavior behavior = {}) {
    auto source = sim_worker_source(opts, std::move(behavior));
    if (!source)
      throw std::runtime_error(render(source.error()));
    return rt.pool(std::move(*source));
  }

private:
  static process::temp_directory make_dir() {
    auto dir = process::temp_directory::make("sim-corpus");
    if (!dir)
      throw std::runtime_error(render(dir.error()));
    return std::move(*dir);
  }

  process::temp_directory dir_;
  std::vector<criterion::corpus_entry> entries_;
};

/// A [frames, B, dim] batch of `tags` with `lengths`, its log-posteriors
/// seeded random (`criterion::fill_random_log_posteriors`).
inline batch random_batch(std::vector<std::string> tags, std::vector<int64_t> lengths,
                          size_t frames, size_t dim, uint64_t seed) {
  batch b;
  b.log_posteriors = tensor::zeros({frames, tags.size(), dim});
  criterion::fill_random_log_posteriors(b.log_posteriors.data(), frames * tags.size(), dim, seed);
  b.seq_lengths = std::move(lengths);
  b.tags = std::move(tags);
  return b;
}

} // namespace sprintrt::test
