#include "tools/sprintrt/demo_task.hpp"

#include <fstream>
#include <random>

#include "criterion/corpus.hpp"

namespace sprintrt::cli {

namespace {

using row_vector = Eigen::RowVectorXf;

/// Everything that is shared by all utterances: the prototypes.
struct task_model {
  /// Row k: onset (`onset`) and offset (`offset`) prototype of label k; the
  /// blank's row (0) is unused.
  matrix onset;
  matrix offset;
};

task_model make_prototypes(const demo_task_config& config, uint32_t labels, std::mt19937_64& gen) {
  std::normal_distribution<float> normal{0.0f, config.prototype_scale};
  auto features = static_cast<Eigen::Index>(config.features);
  task_model m{matrix::Zero(labels + 1, features), matrix::Zero(labels + 1, features)};
  for (uint32_t pair = 0; 2 * pair < labels; ++pair) {
    row_vector p(features);
    row_vector q(features);
    for (Eigen::Index f = 0; f < features; ++f) {
      p(f) = normal(gen);
      q(f) = normal(gen);
    }
    // The same two points in opposite directions: one frame alone is
    // ambiguous between the two labels of a pair.
    m.onset.row(2 * pair + 1) = p;
    m.offset.row(2 * pair + 1) = q;
    m.onset.row(2 * pair + 2) = q;
    m.offset.row(2 * pair + 2) = p;
  }
  return m;
}

demo_segment make_segment(std::string name, const demo_task_config& config, uint32_t labels,
                          const task_model& m, std::mt19937_64& gen) {
  std::normal_distribution<float> normal{0.0f, 1.0f};
  std::uniform_int_distribution<uint32_t> label{1, labels};
  std::uniform_int_distribution<size_t> count{3, 8};
  std::uniform_int_distribution<size_t> duration{3, 7};
  std::uniform_int_distribution<size_t> gap{0, 2};
  auto features = static_cast<Eigen::Index>(config.features);
  demo_segment seg;
  seg.name = std::move(name);
  // The clean frames first, then noise and the utterance's offset on all.
  std::vector<row_vector> frames;
  auto pause = [&] { frames.insert(frames.end(), gap(gen), row_vector::Zero(features)); };
  size_t n = count(gen);
  for (size_t k = 0; k < n; ++k) {
    uint32_t l = label(gen);
    seg.labels.push_back(l);
    pause();
    size_t d = duration(gen);
    for (size_t t = 0; t < d; ++t) {
      float s = static_cast<float>(t) / static_cast<float>(d - 1); // 0 at onset, 1 at offset
      frames.push_back((1.0f - s) * m.onset.row(l) + s * m.offset.row(l));
    }
  }
  pause();
  row_vector speaker(features);
  for (Eigen::Index f = 0; f < features; ++f)
    speaker(f) = config.speaker_offset * normal(gen);
  seg.features.resize(static_cast<Eigen::Index>(frames.size()), features);
  for (size_t t = 0; t < frames.size(); ++t)
    for (Eigen::Index f = 0; f < features; ++f)
      seg.features(static_cast<Eigen::Index>(t), f) =
          frames[t](f) + speaker(f) + config.noise * normal(gen);
  return seg;
}

} // namespace

demo_task make_demo_task(const demo_task_config& config) {
  std::mt19937_64 gen{config.seed};
  uint32_t labels = config.labels + config.labels % 2;
  auto prototypes = make_prototypes(config, labels, gen);
  demo_task task;
  task.classes = labels + 1;
  for (size_t i = 0; i < config.train_segments; ++i)
    task.train.push_back(
        make_segment("demo/train/seg-" + std::to_string(i), config, labels, prototypes, gen));
  for (size_t i = 0; i < config.heldout_segments; ++i)
    task.heldout.push_back(
        make_segment("demo/heldout/seg-" + std::to_string(i), config, labels, prototypes, gen));
  return task;
}

caf::error write_demo_corpus(const std::vector<demo_segment>& segments, const std::string& path) {
  std::vector<criterion::corpus_entry> entries;
  for (const auto& seg : segments)
    entries.push_back({seg.name, seg.labels});
  return criterion::write_corpus_file(path, entries);
}

uint32_t confusable_label(uint32_t label) {
  return label % 2 == 1 ? label + 1 : label - 1;
}

caf::error write_confusable_denominator(const std::vector<demo_segment>& segments,
                                        const std::string& path) {
  std::ofstream out{path};
  for (const auto& seg : segments)
    for (size_t i = 0; i < seg.labels.size(); ++i) {
      out << seg.name << '\t';
      for (size_t j = 0; j < seg.labels.size(); ++j)
        out << (j == 0 ? "" : " ") << (j == i ? confusable_label(seg.labels[j]) : seg.labels[j]);
      out << '\n';
    }
  out.flush();
  if (!out)
    return make_error(errc::io_error, "cannot write the denominator file '" + path + "'");
  return {};
}

} // namespace sprintrt::cli
