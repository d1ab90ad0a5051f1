// sprintrt::fsa_loss (include/sprintrt/fsa_loss.hpp), the C++ entry to the
// batch kernels: the full sum and MMI against a brute force over every path
// in double, bMMI and sMBR against sequence_loss one segment at a time, the
// same bits on any number of threads, the counts, and the errors.

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "criterion/sequence_criterion.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/fsa_loss.hpp"

namespace {

using sprintrt::fsa_batch_view;
using sprintrt::fsa_criterion;
using sprintrt::fsa_loss_options;

constexpr double inf = std::numeric_limits<double>::infinity();

struct edge {
  int64_t from, to, emission;
  double weight;
};

/// Sequences (states, edges with local state numbers) as one batch FSA in
/// the WeightedFsa layout, owning its arrays.
struct batch_arrays {
  std::vector<int64_t> edges;
  std::vector<double> weights;
  std::vector<int64_t> start_end;
  int64_t num_states = 0;
  std::vector<std::vector<edge>> local; // per sequence, local numbers
  std::vector<int64_t> sizes;

  explicit batch_arrays(std::vector<std::pair<int64_t, std::vector<edge>>> sequences) {
    std::vector<int64_t> from, to, emission, sequence, starts, ends;
    for (size_t b = 0; b < sequences.size(); ++b) {
      const auto& [states, list] = sequences[b];
      for (const auto& e : list) {
        from.push_back(num_states + e.from);
        to.push_back(num_states + e.to);
        emission.push_back(e.emission);
        sequence.push_back(static_cast<int64_t>(b));
        weights.push_back(e.weight);
      }
      starts.push_back(num_states);
      ends.push_back(num_states + states - 1);
      num_states += states;
      local.push_back(list);
      sizes.push_back(states);
    }
    for (const auto* row : {&from, &to, &emission, &sequence})
      edges.insert(edges.end(), row->begin(), row->end());
    start_end = starts;
    start_end.insert(start_end.end(), ends.begin(), ends.end());
  }

  fsa_batch_view view() const {
    return {edges.data(),     static_cast<int64_t>(weights.size()), weights.data(),
            start_end.data(), static_cast<int64_t>(sizes.size()),   num_states};
  }
};

/// Every path of `length` edges from state 0 to the last state of
/// sequence `b`: log Z and each (frame, column)'s posterior [T x D].
struct enumerated {
  double log_z = -inf;
  std::vector<double> occupancy;
};

enumerated enumerate(const batch_arrays& fsa, size_t b, const std::vector<float>& lp, int64_t batch,
                     int64_t classes, int64_t sequence_of_lp, int64_t length, int64_t frames,
                     double am_scale = 1.0) {
  const auto& edges = fsa.local[b];
  const int64_t end = fsa.sizes[b] - 1;
  std::vector<std::pair<double, std::vector<int64_t>>> paths;
  std::vector<int64_t> path;
  std::function<void(int64_t, double)> walk = [&](int64_t state, double score) {
    const auto t = static_cast<int64_t>(path.size());
    if (t == length) {
      if (state == end && score > -inf)
        paths.emplace_back(score, path);
      return;
    }
    for (const auto& e : edges) {
      if (e.from != state)
        continue;
      const double x = lp[static_cast<size_t>((t * batch + sequence_of_lp) * classes + e.emission)];
      path.push_back(e.emission);
      walk(e.to, score + am_scale * x - e.weight);
      path.pop_back();
    }
  };
  walk(0, 0.0);
  enumerated out;
  out.occupancy.assign(static_cast<size_t>(frames * classes), 0.0);
  double top = -inf;
  for (const auto& p : paths)
    top = std::max(top, p.first);
  if (paths.empty())
    return out;
  double sum = 0;
  for (const auto& p : paths)
    sum += std::exp(p.first - top);
  out.log_z = top + std::log(sum);
  for (const auto& [score, emissions] : paths)
    for (size_t t = 0; t < emissions.size(); ++t)
      out.occupancy[t * static_cast<size_t>(classes) + static_cast<size_t>(emissions[t])] +=
          std::exp(score - out.log_z);
  return out;
}

// Three numerators over 4 columns (one of 0 frames) and a dense-ish shared
// denominator with loops.
batch_arrays numerators() {
  return batch_arrays{{
      {3, {{0, 0, 0, 0.1}, {0, 1, 1, 0.2}, {1, 1, 1, -0.3}, {1, 2, 2, 0.4}, {2, 2, 0, 0.5}}},
      {4, {{0, 1, 1, 0.0}, {1, 2, 2, 0.0}, {2, 3, 3, 0.0}, {3, 3, 0, 0.0}, {1, 1, 0, 0.3}}},
      {1, {}},
  }};
}

batch_arrays denominator() {
  std::vector<edge> edges;
  for (int64_t p = 0; p < 3; ++p)
    for (int64_t q = 1; q < 4; ++q)
      for (int64_t k = 0; k < 4; ++k)
        if ((p + q + k) % 3 != 0)
          edges.push_back({p, q, k, 0.1 * static_cast<double>(p + 2 * q + k)});
  for (int64_t k = 0; k < 4; ++k)
    edges.push_back({3, 3, k, 0.2});
  return batch_arrays{{{4, edges}}};
}

struct batch_input {
  int64_t frames = 5, batch = 3, classes = 4;
  std::vector<int64_t> lengths{5, 4, 0};
  std::vector<float> lp;
  batch_input() : batch_input(5, {5, 4, 0}) {}
  batch_input(int64_t max_frames, std::vector<int64_t> frame_counts)
      : frames(max_frames), batch(static_cast<int64_t>(frame_counts.size())),
        lengths(std::move(frame_counts)) {
    std::mt19937 rng{17};
    std::normal_distribution<float> normal{0.0f, 1.5f};
    lp.resize(static_cast<size_t>(frames * batch * classes));
    for (auto& x : lp)
      x = normal(rng);
  }
  size_t at(int64_t t, int64_t b, int64_t k) const {
    return static_cast<size_t>((t * batch + b) * classes + k);
  }
};

struct outputs {
  std::vector<double> loss;
  std::vector<float> gradient;
  sprintrt::fsa_loss_counts counts;
};

outputs run(const batch_input& in, const batch_arrays& fsa, const fsa_loss_options& options) {
  outputs out;
  out.loss.assign(static_cast<size_t>(in.batch), -1.0);
  out.gradient.assign(in.lp.size(), 7.0f);
  auto counts = sprintrt::fsa_loss(in.lp.data(), in.frames, in.batch, in.classes, in.lengths.data(),
                                   fsa.view(), options, out.loss.data(), out.gradient.data());
  if (!counts)
    FAIL(sprintrt::error_message(counts.error()));
  out.counts = *counts;
  return out;
}

std::string error_of(const batch_input& in, const batch_arrays& fsa,
                     const fsa_loss_options& options) {
  std::vector<double> loss(static_cast<size_t>(in.batch));
  std::vector<float> gradient(in.lp.size());
  auto counts = sprintrt::fsa_loss(in.lp.data(), in.frames, in.batch, in.classes, in.lengths.data(),
                                   fsa.view(), options, loss.data(), gradient.data());
  REQUIRE(!counts);
  return sprintrt::error_message(counts.error());
}

} // namespace

TEST_CASE("fsa_loss: the full sum equals a brute force over every path") {
  const batch_input in;
  const auto fsa = numerators();
  const auto out = run(in, fsa, {});
  for (int64_t b = 0; b < in.batch; ++b) {
    const auto want = enumerate(fsa, static_cast<size_t>(b), in.lp, in.batch, in.classes, b,
                                in.lengths[static_cast<size_t>(b)], in.frames);
    CHECK(out.loss[static_cast<size_t>(b)] == Approx(-want.log_z).epsilon(1e-6));
    for (int64_t t = 0; t < in.frames; ++t)
      for (int64_t k = 0; k < in.classes; ++k)
        CHECK(out.gradient[in.at(t, b, k)] ==
              Approx(-want.occupancy[static_cast<size_t>(t * in.classes + k)]).margin(1e-6));
  }
  // 0 frames, and a numerator whose start is its end: loss 0.
  CHECK(out.loss[2] == 0.0);
  CHECK(out.counts.scaled == 0);
  CHECK(out.counts.log_space == 0);
}

TEST_CASE("fsa_loss: MMI over a shared denominator equals a brute force over every path") {
  const batch_input in;
  const auto num = numerators();
  const auto den = denominator();
  const std::vector<double> cost{0.3, -0.2, 0.0};
  fsa_loss_options options;
  options.criterion = fsa_criterion::mmi;
  const auto den_view = den.view();
  options.denominator = &den_view;
  options.am_scale = 0.8;
  options.numerator_cost = cost.data();
  const auto out = run(in, num, options);
  for (int64_t b = 0; b < 2; ++b) {
    const auto length = in.lengths[static_cast<size_t>(b)];
    const auto n = enumerate(num, static_cast<size_t>(b), in.lp, in.batch, in.classes, b, length,
                             in.frames, 0.8);
    const auto d = enumerate(den, 0, in.lp, in.batch, in.classes, b, length, in.frames, 0.8);
    CHECK(out.loss[static_cast<size_t>(b)] ==
          Approx(d.log_z - (n.log_z - cost[static_cast<size_t>(b)])).epsilon(1e-6));
    for (int64_t t = 0; t < in.frames; ++t)
      for (int64_t k = 0; k < in.classes; ++k) {
        const auto i = static_cast<size_t>(t * in.classes + k);
        CHECK(out.gradient[in.at(t, b, k)] ==
              Approx(0.8 * (d.occupancy[i] - n.occupancy[i])).margin(1e-6));
      }
  }
  // Two sequences with frames, both in probability space (the shared,
  // dense denominator).
  CHECK(out.counts.scaled == 2);
  CHECK(out.counts.log_space == 0);
}

TEST_CASE("fsa_loss: the results do not depend on the number of threads") {
  // 21 sequences (more than one block) over a shared denominator large
  // enough for blocked products: 40 states, every state reaching every
  // state, the edges into q emitting q % 4.
  std::mt19937 rng{18};
  std::uniform_real_distribution<double> cost{0.0, 3.0};
  std::vector<edge> den_edges;
  for (int64_t p = 0; p < 40; ++p)
    for (int64_t q = 1; q < 40; ++q)
      den_edges.push_back({p, q, q % 4, cost(rng)});
  const batch_arrays den{{{40, den_edges}}};
  const auto den_view = den.view();
  const auto two = numerators();
  std::vector<std::pair<int64_t, std::vector<edge>>> sequences;
  std::vector<int64_t> lengths;
  for (int64_t b = 0; b < 21; ++b) {
    sequences.push_back(
        {two.sizes[static_cast<size_t>(b % 2)], two.local[static_cast<size_t>(b % 2)]});
    lengths.push_back(5 + (b * 7) % 13);
  }
  const batch_arrays num{sequences};
  const batch_input in{17, lengths};
  for (const auto criterion : {fsa_criterion::mmi, fsa_criterion::bmmi, fsa_criterion::smbr}) {
    INFO("criterion " << static_cast<int>(criterion));
    fsa_loss_options options;
    options.criterion = criterion;
    options.denominator = &den_view;
    options.boost = criterion == fsa_criterion::bmmi ? 0.5 : 0.0;
    options.threads = 1;
    const auto one = run(in, num, options);
    CHECK(one.counts.scaled == 21);
    for (const int64_t threads : {2, 3, 7}) {
      options.threads = threads;
      const auto many = run(in, num, options);
      CHECK(many.loss == one.loss);
      CHECK(many.gradient == one.gradient);
    }
  }
}

TEST_CASE("fsa_loss: bMMI and sMBR equal sequence_loss one segment at a time, on any threads") {
  using namespace sprintrt::criterion;
  const batch_input in;
  const auto num = numerators();
  const auto den = denominator();
  const auto den_view = den.view();
  for (const auto& [criterion, kind] : {std::pair{fsa_criterion::bmmi, sequence_kind::bmmi},
                                        std::pair{fsa_criterion::smbr, sequence_kind::smbr}}) {
    fsa_loss_options options;
    options.criterion = criterion;
    options.denominator = &den_view;
    options.boost = criterion == fsa_criterion::bmmi ? 0.5 : 0.0;
    const auto one = run(in, num, options);
    options.threads = 3;
    const auto three = run(in, num, options);
    CHECK(one.loss == three.loss);
    CHECK(one.gradient == three.gradient);
    // Each segment alone through the criterion's own entry.
    wfsa graph;
    graph.add_state(0, wfsa::none);
    for (int64_t q = 1; q < den.sizes[0]; ++q)
      graph.add_state(wfsa::none, q == den.sizes[0] - 1 ? 0 : wfsa::none);
    for (const auto& e : den.local[0])
      graph.edges.push_back({static_cast<uint32_t>(e.from), static_cast<uint32_t>(e.to),
                             static_cast<uint32_t>(e.emission), e.weight});
    for (int64_t b = 0; b < 2; ++b) {
      std::vector<fsa_edge> edges;
      for (const auto& e : num.local[static_cast<size_t>(b)])
        edges.push_back({static_cast<uint32_t>(e.from), static_cast<uint32_t>(e.to),
                         static_cast<uint32_t>(e.emission), static_cast<float>(e.weight)});
      const auto numerator =
          fsa::make(static_cast<uint32_t>(num.sizes[static_cast<size_t>(b)]), edges);
      REQUIRE(numerator);
      const auto length = in.lengths[static_cast<size_t>(b)];
      row_matrix_f x(length, in.classes);
      for (int64_t t = 0; t < length; ++t)
        for (int64_t k = 0; k < in.classes; ++k)
          x(t, k) = in.lp[in.at(t, b, k)];
      const sequence_segment segment{"seg", &*numerator, &graph, 3, 0, nullptr};
      row_matrix_f error_signal(length, in.classes);
      sequence_workspace workspace;
      sequence_scales scales;
      scales.boost = options.boost;
      const auto want = sequence_loss(kind, scales, segment, x, error_signal, workspace);
      REQUIRE(want);
      CHECK(one.loss[static_cast<size_t>(b)] == Approx(want->loss).epsilon(1e-12));
      for (int64_t t = 0; t < length; ++t)
        for (int64_t k = 0; k < in.classes; ++k)
          CHECK(one.gradient[in.at(t, b, k)] == Approx(error_signal(t, k)).margin(1e-6));
      for (int64_t t = length; t < in.frames; ++t)
        for (int64_t k = 0; k < in.classes; ++k)
          CHECK(one.gradient[in.at(t, b, k)] == 0.0f);
    }
  }
}

TEST_CASE("fsa_loss: bad input is an error naming it") {
  batch_input in;
  const auto num = numerators();
  const auto den = denominator();
  const auto den_view = den.view();
  fsa_loss_options mmi;
  mmi.criterion = fsa_criterion::mmi;
  mmi.denominator = &den_view;
  in.lengths[1] = 9;
  CHECK(error_of(in, num, {}) == "seq_lens[1] is 9, not in [0, 5] (log_probs' frames)");
  in.lengths[1] = 4;
  fsa_loss_options no_denominator;
  no_denominator.criterion = fsa_criterion::smbr;
  CHECK(error_of(in, num, no_denominator) == "criterion smbr needs a denominator");
  fsa_loss_options full_sum_with_denominator;
  full_sum_with_denominator.denominator = &den_view;
  CHECK(error_of(in, num, full_sum_with_denominator) == "the full sum takes no denominator");
  fsa_loss_options zero_threads;
  zero_threads.threads = 0;
  CHECK(error_of(in, num, zero_threads) == "num_threads must be at least 1, got 0");
  auto bad_scale = mmi;
  bad_scale.am_scale = 0;
  CHECK(error_of(in, num, bad_scale) == "am-scale 0 is not a finite number > 0");
  auto two = batch_arrays{{{4, den.local[0]}, {4, den.local[0]}}};
  const auto two_view = two.view();
  auto two_denominators = mmi;
  two_denominators.denominator = &two_view;
  CHECK(error_of(in, num, two_denominators) ==
        "den_fsa has 2 sequences for a batch of 3 (one graph for every sequence, or one per "
        "sequence)");
  auto wide = numerators();
  wide.edges[2 * wide.weights.size()] = 4; // edge 0 emits column 4 of 4
  CHECK(error_of(in, wide, {}) == "fsa.edges: edge 0 emits 4, but log_probs has 4 classes (D)");
  in.lp[in.at(0, 0, 0)] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THAT(error_of(in, num, {}), Catch::Contains("NaN"));
}

TEST_CASE("fsa_loss: a path that both passes of probability space lose is computed in log space") {
  // Two branches to the end (columns 0 and 1) and a dead end (column 2);
  // scores 700 apart make the forward pass lose the numerator's branch
  // where the dead end leads and the backward pass where the other branch
  // leads. Both lose the same path, so their occupancies agree.
  const batch_arrays den{{{5,
                           {{0, 1, 0, 0.0},
                            {1, 1, 0, 0.0},
                            {1, 4, 0, 0.0},
                            {0, 2, 1, 0.0},
                            {2, 2, 1, 0.0},
                            {2, 4, 1, 0.0},
                            {0, 3, 2, 0.0},
                            {3, 3, 2, 0.0}}}}};
  const batch_arrays num{{{3, {{0, 1, 0, 0.0}, {1, 1, 0, 0.0}, {1, 2, 0, 0.0}}}}};
  batch_input in;
  in.frames = 6;
  in.batch = 1;
  in.classes = 3;
  in.lengths = {6};
  in.lp = {-50, 0, -700, -700, -700, 0, 0, -700, -700, 0, -700, -700, -700, -700, 0, -50, 0, -700};
  const auto den_view = den.view();
  fsa_loss_options options;
  options.criterion = fsa_criterion::mmi;
  options.denominator = &den_view;
  const auto out = run(in, num, options);
  const auto n = enumerate(num, 0, in.lp, 1, 3, 0, 6, 6);
  const auto d = enumerate(den, 0, in.lp, 1, 3, 0, 6, 6);
  CHECK(out.loss[0] == Approx(d.log_z - n.log_z).margin(1e-9));
  for (size_t i = 0; i < in.lp.size(); ++i)
    CHECK(out.gradient[i] == Approx(d.occupancy[i] - n.occupancy[i]).margin(1e-6));
  CHECK(out.counts.scaled == 0);
  CHECK(out.counts.log_space == 1);
}
