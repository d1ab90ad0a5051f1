#include "criterion/scaled_forward_backward.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "criterion/avx2_clones.hpp"
#include "criterion/dense_product.hpp"
#include "criterion/vector_exp.hpp"

namespace sprintrt::criterion {

// The recursions
// ==============
//
// Frames are t = 1..T (row t-1 of a sequence's scores x), frame states as in
// frame_graph.hpp: state q emits column k(q), A(p, q) is the probability of
// the transitions p -> q, i and f the initial and final vectors. With
// p_t(k) = exp(x[t-1, k] - m_t), m_t the frame's largest score:
//
//   forward   a_0 = i,            a_t(q) = p_t(k(q)) sum_p a_{t-1}(p) A(p, q) / c_t
//   backward  b_T = f,            b_{t-1}(p) = sum_q A(p, q) p_t(k(q)) b_t(q) / d_{t-1}
//
// with c_t and d_{t-1} the largest entry before scaling (so that every
// vector's largest entry is 1 and nothing overflows). Then
//   log Z = sum_t log c_t + log(a_T . f) + sum_t m_t + the graph's offsets,
// and the occupancy of frame state q at frame t is
//   gamma_t(q) = a_t(q) b_t(q) exp(sum_{s<=t} log c_s + sum_{s>=t} log d_s - log Zhat),
// Zhat = Z without the offsets and shifts (they are common to every path).
// The column occupancy sums gamma_t over the states emitting the column. The
// log scales are sums of doubles: no frame count overflows them.
//
// For the whole block at once, a_t is an [nb, S] matrix, and the step is one
// product with A (dense or sparse) and an elementwise emission: the batch is
// innermost, the graph read once per frame for all sequences.
//
// sMBR's expectation semiring (the conditional expected accuracies of
// sequence_engine.cpp) follows the same products: with h_t(q) = 1 where
// k(q) is the reference's column at frame t,
//   acc_t(q)  = [p_t(k(q)) sum_p a_{t-1}(p) acc_{t-1}(p) A(p, q)] / [c_t a_t(q)] + h_t(q),
//   bacc_{t-1}(p) = [sum_q A(p, q) p_t(k(q)) b_t(q) (h_t(q) + bacc_t(q))] / [d_{t-1} b_{t-1}(p)],
// E[A] = sum_q a_T(q) f(q) acc_T(q) / (a_T . f), and the derivative of E[A]
// by x[t-1, k] sums gamma_t(q) (acc_t(q) + bacc_t(q) - E[A]) over k(q) = k.
//
// What it cannot represent
// ========================
//
// Double's range ends near exp(-708) (DBL_MIN; below it, subnormals lose
// precision, then 0). A score more than 700 below its frame's maximum (at a
// column the graph emits) would underflow in p_t: detected directly. The
// products can still fall out of range: a vector of largest entry 1 times
// transitions down to exp(-700) times emissions down to exp(-700). What a
// frame's product loses below DBL_MIN (flushed, or subnormal) is at most
// eps = S DBL_MIN / top relative to its largest entry `top` before
// rescaling (S terms per entry, S states). A path lost by one pass at frame
// t carries at most eps of that pass's largest entry, times at most 1 of
// the other's: at most S eps against the overlap of the rescaled vectors,
// s_t = sum_q a_t(q) b_t(q) (both of largest entry 1), which is what the
// frame's occupancies are divided by. So every frame's overlap must be at
// least `max_lost_inverse` S (eps_forward + eps_backward): what the passes
// lost then stays below 1e-20 of Z, even for a path that both lost (which no
// comparison of the two passes could show). It holds with room to spare
// unless a frame's mass falls far out of range, or the two passes put their
// mass on states hundreds of nats apart.
//
// Then, as Kaldi's chain denominator does, every frame's occupancy sum is
// checked against 1 within `max_occupancy_error`: the passes agree. A
// sequence that fails any of this is handed back (`exact` false) for the
// log-space recursions; so is one whose mass vanishes (possibly no path at
// all, which only the log-space pass can tell from underflow).

namespace {

constexpr double min_log_ratio = -700;

// What the passes may lose, as a fraction of Z, is at most 1 / this.
constexpr double max_lost_inverse = 1e20;

// The least overlap of a frame whose forward and backward vectors had
// largest entries exp(log_top_forward) and exp(log_top_backward) before
// rescaling, over `states` states (see above).
double least_overlap(double log_top_forward, double log_top_backward, double states) {
  const double eps = std::numeric_limits<double>::min() * states * states;
  return max_lost_inverse * eps * (std::exp(-log_top_forward) + std::exp(-log_top_backward));
}

// Multiplies row b of `block` by factors[b].
void scale_rows(Eigen::Map<Eigen::MatrixXd> block, const double* factors) {
  const Eigen::Index width = block.rows();
  if (width == 1) {
    Eigen::Map<Eigen::VectorXd>{block.data(), block.size()} *= factors[0];
    return;
  }
  for (Eigen::Index q = 0; q < block.cols(); ++q)
    for (Eigen::Index b = 0; b < width; ++b)
      block(b, q) *= factors[b];
}

// out[b] = the sum over q of x(b, q), added in the order of the states
// whatever the block's width: a sequence's results do not depend on the
// sequences beside it.
void row_sums(const Eigen::Map<Eigen::MatrixXd>& x, double* out) {
  if (x.rows() == 1) {
    double sum = 0;
    for (Eigen::Index q = 0; q < x.cols(); ++q)
      sum += x.data()[q];
    out[0] = sum;
    return;
  }
  std::fill_n(out, x.rows(), 0.0);
  for (Eigen::Index q = 0; q < x.cols(); ++q)
    for (Eigen::Index b = 0; b < x.rows(); ++b)
      out[b] += x(b, q);
}

} // namespace

scaled_sequence scaled_sequence::of(const row_matrix_d& scores, row_matrix_d* gradient,
                                    span<const uint32_t> reference) {
  return {scores.data(), scores.rows(), scores.cols(), reference,
          gradient == nullptr ? nullptr : gradient->data()};
}

scaled_forward_backward::block_map
scaled_forward_backward::shaped(std::vector<double>& buffer, Eigen::Index rows, Eigen::Index cols) {
  const auto size = static_cast<size_t>(rows * cols);
  if (buffer.size() < size)
    buffer.resize(size);
  return {buffer.data(), rows, cols};
}

scaled_forward_backward::block_map scaled_forward_backward::frame(std::vector<double>& buffer,
                                                                  Eigen::Index t,
                                                                  Eigen::Index cols) const {
  return {buffer.data() + t * width_ * cols, width_, cols};
}

SPRINTRT_AVX2_CLONES
void scaled_forward_backward::step(const frame_graph& graph, const_block_map in, block_map out,
                                   bool transpose) {
  const Eigen::Index width = in.rows();
  if (graph.is_dense) {
    dense_product(in.data(), width, graph.dense.data(), graph.num_states, transpose, out.data());
    return;
  }
  double* __restrict target = out.data();
  const double* __restrict source = in.data();
  // The bands: target q takes weight times source q - offset (forward), or
  // source q gives to target q - offset (backward). Straight loops over
  // contiguous states, the batch innermost.
  out.setZero();
  for (const auto& band : graph.bands) {
    const Eigen::Index n = band.size;
    const Eigen::Index into = transpose ? band.first - band.offset : band.first;
    const Eigen::Index from = transpose ? band.first : band.first - band.offset;
    const double* w = graph.band_weight.data() + band.begin;
    if (width == 1) {
      for (Eigen::Index i = 0; i < n; ++i)
        target[into + i] += w[i] * source[from + i];
    } else {
      for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index b = 0; b < width; ++b)
          target[(into + i) * width + b] += w[i] * source[(from + i) * width + b];
    }
  }
  // The other transitions, by target (forward) or by source (backward),
  // over the states that have any.
  const auto& rows = transpose ? graph.out_rows : graph.in_rows;
  const auto& begin = transpose ? graph.out_begin : graph.in_begin;
  const auto& other = transpose ? graph.out_target : graph.in_source;
  const auto& weight = transpose ? graph.out_weight : graph.in_weight;
  if (width == 1) {
    // One sequence (a numerator): a gather per state, summed in registers.
    for (const uint32_t q : rows) {
      double sum = 0;
      for (uint32_t i = begin[q]; i < begin[q + 1]; ++i)
        sum += weight[i] * source[other[i]];
      target[q] += sum;
    }
    return;
  }
  for (const uint32_t q : rows) {
    double* row = target + q * width;
    for (uint32_t i = begin[q]; i < begin[q + 1]; ++i) {
      const double* from = source + other[i] * width;
      const double w = weight[i];
      for (Eigen::Index b = 0; b < width; ++b)
        row[b] += w * from[b];
    }
  }
}

void scaled_forward_backward::emit(const frame_graph& graph, const_block_map e, const_block_map in,
                                   block_map out) {
  const Eigen::Index width = in.rows();
  const uint32_t* emission = graph.emission.data();
  if (width == 1) {
    for (uint32_t q = 0; q < graph.num_states; ++q)
      out.data()[q] = in.data()[q] * e.data()[emission[q]];
    return;
  }
  for (uint32_t q = 0; q < graph.num_states; ++q) {
    const double* source = in.data() + q * width;
    const double* factor = e.data() + emission[q] * width;
    double* target = out.data() + q * width;
    for (Eigen::Index b = 0; b < width; ++b)
      target[b] = source[b] * factor[b];
  }
}

void scaled_forward_backward::sum_by_column(const frame_graph& graph, const_block_map mass,
                                            block_map sums) {
  const Eigen::Index width = mass.rows();
  const size_t groups = graph.columns.size();
  if (width == 1) {
    // Summed per column in a register: no chain of stores into one column.
    for (size_t i = 0; i < groups; ++i) {
      double sum = 0;
      for (uint32_t j = graph.column_begin[i]; j < graph.column_begin[i + 1]; ++j)
        sum += mass.data()[graph.column_states[j]];
      sums.data()[graph.columns[i]] += sum;
    }
    return;
  }
  for (size_t i = 0; i < groups; ++i) {
    double* target = sums.data() + graph.columns[i] * width;
    for (uint32_t j = graph.column_begin[i]; j < graph.column_begin[i + 1]; ++j) {
      const double* source = mass.data() + graph.column_states[j] * width;
      for (Eigen::Index b = 0; b < width; ++b)
        target[b] += source[b];
    }
  }
}

template <class AddLogScale>
void scaled_forward_backward::rescale(block_map mass, Eigen::Index t, const char* vanished,
                                      Eigen::Index frame, span<scaled_outcome> outcomes,
                                      AddLogScale add_log_scale) {
  double* tops = tops_.data();
  std::fill_n(tops, width_, 0.0);
  if (width_ == 1 && mass.cols() > 0)
    tops[0] = Eigen::Map<const Eigen::VectorXd>{mass.data(), mass.cols()}.maxCoeff();
  else
    for (Eigen::Index q = 0; q < mass.cols(); ++q)
      for (Eigen::Index b = 0; b < width_; ++b)
        tops[b] = std::max(tops[b], mass(b, q));
  for (Eigen::Index b = 0; b < width_; ++b) {
    double scale = 0;
    if (t <= lengths_[b]) {
      const double top = tops[b];
      auto& outcome = outcomes[static_cast<size_t>(b)];
      if (top > 0) {
        scale = 1 / top;
        add_log_scale(b, std::log(top));
      } else if (outcome.exact) {
        outcome = {false, vanished, frame, 0, 0};
      }
    }
    tops[b] = scale;
  }
  scale_rows(mass, tops);
}

void scaled_forward_backward::run(const frame_graph& graph, span<const scaled_sequence> block,
                                  bool want_gradient, double factor,
                                  span<scaled_outcome> outcomes) {
  assert(graph.unrepresentable.empty());
  assert(block.size() == outcomes.size());
  if (block.size() == 0)
    return;
  const bool accuracy = block[0].reference.size() > 0;
  prepare(graph, block, outcomes);
  forward(graph, block, accuracy, outcomes);
  if (want_gradient)
    backward(graph, block, accuracy, factor, outcomes);
}

void scaled_forward_backward::prepare(const frame_graph& graph, span<const scaled_sequence> block,
                                      span<scaled_outcome> outcomes) {
  width_ = static_cast<Eigen::Index>(block.size());
  classes_ = block[0].classes;
  lengths_.resize(block.size());
  frames_ = 0;
  for (size_t b = 0; b < block.size(); ++b) {
    lengths_[b] = block[b].frames;
    assert(lengths_[b] >= 1 && block[b].classes == classes_);
    frames_ = std::max(frames_, lengths_[b]);
    outcomes[b] = scaled_outcome{true, "", 0, 0, 0};
  }
  tops_.resize(static_cast<size_t>(width_));
  sums_.resize(static_cast<size_t>(width_));
  // The columns some state emits: only they are computed, and only their
  // underflow matters. The others stay 0, never read.
  const auto& columns = graph.columns;
  const size_t used = columns.size();
  shaped(emissions_, width_ * frames_, classes_);
  shift_.assign(block.size(), 0);
  shifted_.resize(used);
  exps_.resize(used);
  for (Eigen::Index t = 0; t < frames_; ++t) {
    block_map e = frame(emissions_, t, classes_);
    e.setZero();
    for (Eigen::Index b = 0; b < width_; ++b) {
      auto& outcome = outcomes[static_cast<size_t>(b)];
      if (t >= lengths_[b]) {
        e.row(b).setOnes();
        continue;
      }
      const double* x = block[static_cast<size_t>(b)].scores + t * classes_;
      double top = -std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < used; ++i)
        top = std::max(top, x[columns[i]]);
      if (top == -std::numeric_limits<double>::infinity()) {
        if (outcome.exact)
          outcome = {false, "every column the graph emits scores -inf", t + 1, 0, 0};
        continue;
      }
      bool in_range = true;
      for (size_t i = 0; i < used; ++i) {
        const double score = x[columns[i]];
        shifted_[i] = score - top;
        in_range &=
            !(shifted_[i] < min_log_ratio) || score == -std::numeric_limits<double>::infinity();
      }
      if (!in_range && outcome.exact)
        outcome = {false, "a frame's scores span more than double's range", t + 1, 0, 0};
      exp_nonpositive(shifted_.data(), exps_.data(), used);
      for (size_t i = 0; i < used; ++i)
        e(b, columns[i]) = exps_[i];
      shift_[b] += top;
    }
  }
}

void scaled_forward_backward::forward(const frame_graph& graph, span<const scaled_sequence> block,
                                      bool accuracy, span<scaled_outcome> outcomes) {
  const Eigen::Index states = graph.num_states;
  shaped(alpha_, width_ * (frames_ + 1), states);
  block_map first = frame(alpha_, 0, states);
  for (Eigen::Index q = 0; q < states; ++q)
    first.col(q).setConstant(graph.initial[static_cast<size_t>(q)]);
  if (accuracy) {
    shaped(alpha_accuracy_, width_ * (frames_ + 1), states);
    frame(alpha_accuracy_, 0, states).setZero();
  }
  shaped(log_alpha_scale_, width_, frames_ + 1).setZero();
  const auto log_scale = [&](Eigen::Index b, Eigen::Index t) -> double& {
    return log_alpha_scale_[static_cast<size_t>(t * width_ + b)];
  };
  block_map product = shaped(product_, width_, states);
  for (Eigen::Index t = 1; t <= frames_; ++t) {
    block_map previous = frame(alpha_, t - 1, states);
    block_map current = frame(alpha_, t, states);
    block_map e = frame(emissions_, t - 1, classes_);
    step(graph, previous, product, false);
    emit(graph, e, product, current);
    if (accuracy) {
      block_map weighted = shaped(weighted_, width_, states);
      block_map accuracy_product = shaped(accuracy_product_, width_, states);
      weighted = previous.cwiseProduct(frame(alpha_accuracy_, t - 1, states));
      step(graph, weighted, accuracy_product, false);
      block_map acc = frame(alpha_accuracy_, t, states);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const double mass = current(b, q);
          const bool hit = t <= lengths_[b] &&
                           block[static_cast<size_t>(b)].reference[static_cast<size_t>(t - 1)] ==
                               graph.emission[q];
          acc(b, q) =
              mass > 0 ? accuracy_product(b, q) * e(b, graph.emission[q]) / mass + (hit ? 1.0 : 0.0)
                       : 0.0;
        }
    }
    rescale(
        current, t, "the forward mass vanished", t, outcomes,
        [&](Eigen::Index b, double log_top) { log_scale(b, t) = log_scale(b, t - 1) + log_top; });
  }
  log_total_.assign(static_cast<size_t>(width_), 0);
  for (Eigen::Index b = 0; b < width_; ++b) {
    auto& outcome = outcomes[static_cast<size_t>(b)];
    const Eigen::Index length = lengths_[b];
    block_map last = frame(alpha_, length, states);
    double total = 0;
    for (Eigen::Index q = 0; q < states; ++q)
      total += last(b, q) * graph.final[static_cast<size_t>(q)];
    if (!(total > 0)) {
      if (outcome.exact)
        outcome = {false, "no forward mass reaches a final state", length, 0, 0};
      continue;
    }
    log_total_[b] = log_scale(b, length) + std::log(total);
    outcome.log_z = log_total_[b] + shift_[b] + graph.initial_offset + graph.final_offset +
                    static_cast<double>(length) * graph.edge_offset;
    if (accuracy) {
      block_map acc = frame(alpha_accuracy_, length, states);
      double sum = 0;
      for (Eigen::Index q = 0; q < states; ++q)
        sum += last(b, q) * graph.final[static_cast<size_t>(q)] * acc(b, q);
      outcome.expected_accuracy = sum / total;
    }
  }
}

void scaled_forward_backward::backward(const frame_graph& graph, span<const scaled_sequence> block,
                                       bool accuracy, double factor,
                                       span<scaled_outcome> outcomes) {
  const Eigen::Index states = graph.num_states;
  shaped(beta_, width_, states).setZero();
  shaped(beta_next_, width_, states);
  if (accuracy) {
    shaped(beta_accuracy_, width_, states).setZero();
    shaped(beta_accuracy_next_, width_, states);
  }
  log_beta_scale_.assign(static_cast<size_t>(width_), 0);
  log_beta_top_.assign(static_cast<size_t>(width_), 0);
  block_map column_sums = shaped(column_sums_, width_, classes_);
  block_map product = shaped(product_, width_, states);
  block_map weighted = shaped(weighted_, width_, states);
  const auto log_alpha_scale = [&](Eigen::Index b, Eigen::Index t) {
    return log_alpha_scale_[static_cast<size_t>(t * width_ + b)];
  };
  for (Eigen::Index t = frames_; t >= 1; --t) {
    // beta_ and beta_next_ trade buffers each frame: views made here.
    block_map beta{beta_.data(), width_, states};
    block_map beta_next{beta_next_.data(), width_, states};
    block_map e = frame(emissions_, t - 1, classes_);
    for (Eigen::Index b = 0; b < width_; ++b)
      if (lengths_[b] == t) {
        for (Eigen::Index q = 0; q < states; ++q)
          beta(b, q) = graph.final[static_cast<size_t>(q)];
        log_beta_top_[static_cast<size_t>(b)] = 0;
      }
    // The occupancies of frame t, summed by column.
    block_map alpha = frame(alpha_, t, states);
    product = alpha.cwiseProduct(beta);
    // The overlap s_t, then the occupancies: product / s_t, whose sum is
    // checked against exp(log scales - log Z) = 1 / s_t.
    row_sums(product, sums_.data());
    for (Eigen::Index b = 0; b < width_; ++b) {
      auto& outcome = outcomes[static_cast<size_t>(b)];
      tops_[b] = 0;
      if (t > lengths_[b] || !outcome.exact)
        continue;
      const double scale = std::exp(log_alpha_scale(b, t) + log_beta_scale_[b] - log_total_[b]);
      const double log_top = log_alpha_scale(b, t) - log_alpha_scale(b, t - 1);
      if (!(sums_[b] >= least_overlap(log_top, log_beta_top_[static_cast<size_t>(b)],
                                      static_cast<double>(states))))
        outcome = {false, "the forward and backward passes barely overlap", t, 0, 0};
      else if (!(std::abs(sums_[b] * scale - 1) <= max_occupancy_error))
        outcome = {false, "a frame's occupancies do not sum to 1", t, 0, 0};
      else
        tops_[b] = scale;
    }
    column_sums.setZero();
    if (accuracy) {
      scale_rows(product, tops_.data());
      block_map alpha_accuracy = frame(alpha_accuracy_, t, states);
      block_map beta_accuracy{beta_accuracy_.data(), width_, states};
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b)
          column_sums(b, graph.emission[q]) +=
              product(b, q) * (alpha_accuracy(b, q) + beta_accuracy(b, q) -
                               outcomes[static_cast<size_t>(b)].expected_accuracy);
    } else {
      // The occupancies summed by column before their scale: D products
      // per sequence instead of S.
      sum_by_column(graph, product, column_sums);
      scale_rows(column_sums, tops_.data());
    }
    for (Eigen::Index b = 0; b < width_; ++b)
      if (t <= lengths_[b] && outcomes[static_cast<size_t>(b)].exact) {
        double* row = block[static_cast<size_t>(b)].gradient + (t - 1) * classes_;
        for (Eigen::Index k = 0; k < classes_; ++k)
          row[k] += factor * column_sums(b, k);
      }

    // b_{t-1} from b_t.
    emit(graph, e, beta, weighted);
    step(graph, weighted, beta_next, true);
    if (accuracy) {
      block_map beta_accuracy{beta_accuracy_.data(), width_, states};
      block_map beta_accuracy_next{beta_accuracy_next_.data(), width_, states};
      block_map weighted_accuracy = shaped(weighted_accuracy_, width_, states);
      block_map accuracy_product = shaped(accuracy_product_, width_, states);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const bool hit = t <= lengths_[b] &&
                           block[static_cast<size_t>(b)].reference[static_cast<size_t>(t - 1)] ==
                               graph.emission[q];
          weighted_accuracy(b, q) = weighted(b, q) * ((hit ? 1.0 : 0.0) + beta_accuracy(b, q));
        }
      step(graph, weighted_accuracy, accuracy_product, true);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const double mass = beta_next(b, q);
          beta_accuracy_next(b, q) = mass > 0 ? accuracy_product(b, q) / mass : 0.0;
        }
    }
    rescale(beta_next, t, "the backward mass vanished", t - 1, outcomes,
            [&](Eigen::Index b, double log_top) {
              log_beta_scale_[b] += log_top;
              log_beta_top_[static_cast<size_t>(b)] = log_top;
            });
    std::swap(beta_, beta_next_);
    if (accuracy)
      std::swap(beta_accuracy_, beta_accuracy_next_);
  }
}

} // namespace sprintrt::criterion
