#include "criterion/scaled_forward_backward.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

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

} // namespace

void scaled_forward_backward::step(const frame_graph& graph, const block_matrix& in,
                                   block_matrix& out, bool transpose) {
  const Eigen::Index width = in.rows();
  if (graph.is_dense) {
    out.resize(width, graph.num_states);
    dense_product(in.data(), width, graph.dense.data(), graph.num_states, transpose, out.data());
    return;
  }
  out.setZero(width, graph.num_states);
  const auto& begin = transpose ? graph.out_begin : graph.in_begin;
  const auto& other = transpose ? graph.out_target : graph.in_source;
  const auto& weight = transpose ? graph.out_weight : graph.in_weight;
  for (uint32_t q = 0; q < graph.num_states; ++q) {
    double* target = out.data() + q * width;
    for (uint32_t i = begin[q]; i < begin[q + 1]; ++i) {
      const double* source = in.data() + other[i] * width;
      const double w = weight[i];
      for (Eigen::Index b = 0; b < width; ++b)
        target[b] += w * source[b];
    }
  }
}

template <class AddLogScale>
void scaled_forward_backward::rescale(block_matrix& mass, Eigen::Index t, const char* vanished,
                                      Eigen::Index frame, span<scaled_outcome> outcomes,
                                      AddLogScale add_log_scale) {
  if (mass.cols() > 0)
    tops_ = mass.rowwise().maxCoeff();
  else
    tops_.setZero(width_);
  for (Eigen::Index b = 0; b < width_; ++b) {
    double scale = 0;
    if (t <= lengths_[b]) {
      const double top = tops_[b];
      auto& outcome = outcomes[static_cast<size_t>(b)];
      if (top > 0) {
        scale = 1 / top;
        add_log_scale(b, std::log(top));
      } else if (outcome.exact) {
        outcome = {false, vanished, frame, 0, 0};
      }
    }
    tops_[b] = scale;
  }
  mass.array().colwise() *= tops_.array();
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
  classes_ = block[0].scores->cols();
  lengths_.resize(block.size());
  frames_ = 0;
  for (size_t b = 0; b < block.size(); ++b) {
    lengths_[b] = block[b].scores->rows();
    assert(lengths_[b] >= 1 && block[b].scores->cols() == classes_);
    frames_ = std::max(frames_, lengths_[b]);
    outcomes[b] = scaled_outcome{true, "", 0, 0, 0};
  }
  // The columns some state emits: only their underflow matters.
  std::vector<char> emitted(static_cast<size_t>(classes_), 0);
  for (const uint32_t k : graph.emission)
    emitted[k] = 1;
  emissions_.resize(static_cast<size_t>(frames_));
  shift_.assign(block.size(), 0);
  std::vector<double> shifted(static_cast<size_t>(classes_));
  std::vector<double> row(static_cast<size_t>(classes_));
  for (Eigen::Index t = 0; t < frames_; ++t) {
    block_matrix& e = emissions_[static_cast<size_t>(t)];
    e.resize(width_, classes_);
    for (Eigen::Index b = 0; b < width_; ++b) {
      auto& outcome = outcomes[static_cast<size_t>(b)];
      if (t >= lengths_[b]) {
        e.row(b).setOnes();
        continue;
      }
      const double* x = block[static_cast<size_t>(b)].scores->row(t).data();
      double top = -std::numeric_limits<double>::infinity();
      for (Eigen::Index k = 0; k < classes_; ++k)
        if (emitted[k])
          top = std::max(top, x[k]);
      if (top == -std::numeric_limits<double>::infinity()) {
        if (outcome.exact)
          outcome = {false, "every column the graph emits scores -inf", t + 1, 0, 0};
        e.row(b).setZero();
        continue;
      }
      for (Eigen::Index k = 0; k < classes_; ++k) {
        // Columns no state emits are never read: 0 keeps them harmless.
        shifted[k] = emitted[k] ? x[k] - top : -std::numeric_limits<double>::infinity();
        if (shifted[k] < min_log_ratio && x[k] != -std::numeric_limits<double>::infinity() &&
            emitted[k] && outcome.exact)
          outcome = {false, "a frame's scores span more than double's range", t + 1, 0, 0};
      }
      exp_nonpositive(shifted.data(), row.data(), shifted.size());
      for (Eigen::Index k = 0; k < classes_; ++k)
        e(b, k) = row[k];
      shift_[b] += top;
    }
  }
}

void scaled_forward_backward::forward(const frame_graph& graph, span<const scaled_sequence> block,
                                      bool accuracy, span<scaled_outcome> outcomes) {
  const Eigen::Index states = graph.num_states;
  alpha_.resize(static_cast<size_t>(frames_ + 1));
  alpha_[0].resize(width_, states);
  alpha_[0].rowwise() = graph.initial.transpose();
  if (accuracy) {
    alpha_accuracy_.resize(static_cast<size_t>(frames_ + 1));
    alpha_accuracy_[0].setZero(width_, states);
  }
  log_alpha_scale_.setZero(width_, frames_ + 1);
  tops_.resize(width_);
  for (Eigen::Index t = 1; t <= frames_; ++t) {
    const block_matrix& previous = alpha_[static_cast<size_t>(t - 1)];
    block_matrix& current = alpha_[static_cast<size_t>(t)];
    const block_matrix& e = emissions_[static_cast<size_t>(t - 1)];
    step(graph, previous, current, false);
    for (Eigen::Index q = 0; q < states; ++q)
      current.col(q).array() *= e.col(graph.emission[q]).array();
    if (accuracy) {
      weighted_ = previous.cwiseProduct(alpha_accuracy_[static_cast<size_t>(t - 1)]);
      step(graph, weighted_, product_, false);
      block_matrix& acc = alpha_accuracy_[static_cast<size_t>(t)];
      acc.resize(width_, states);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const double mass = current(b, q);
          const bool hit = t <= lengths_[b] &&
                           block[static_cast<size_t>(b)].reference[static_cast<size_t>(t - 1)] ==
                               graph.emission[q];
          acc(b, q) =
              mass > 0 ? product_(b, q) * e(b, graph.emission[q]) / mass + (hit ? 1.0 : 0.0) : 0.0;
        }
    }
    rescale(current, t, "the forward mass vanished", t, outcomes,
            [&](Eigen::Index b, double log_top) {
              log_alpha_scale_(b, t) = log_alpha_scale_(b, t - 1) + log_top;
            });
  }
  log_total_.assign(static_cast<size_t>(width_), 0);
  for (Eigen::Index b = 0; b < width_; ++b) {
    auto& outcome = outcomes[static_cast<size_t>(b)];
    const Eigen::Index length = lengths_[b];
    const auto last = alpha_[static_cast<size_t>(length)].row(b);
    const double total = last.dot(graph.final.transpose());
    if (!(total > 0)) {
      if (outcome.exact)
        outcome = {false, "no forward mass reaches a final state", length, 0, 0};
      continue;
    }
    log_total_[b] = log_alpha_scale_(b, length) + std::log(total);
    outcome.log_z = log_total_[b] + shift_[b] + graph.initial_offset + graph.final_offset +
                    static_cast<double>(length) * graph.edge_offset;
    if (accuracy)
      outcome.expected_accuracy = last.cwiseProduct(graph.final.transpose())
                                      .dot(alpha_accuracy_[static_cast<size_t>(length)].row(b)) /
                                  total;
  }
}

void scaled_forward_backward::backward(const frame_graph& graph, span<const scaled_sequence> block,
                                       bool accuracy, double factor,
                                       span<scaled_outcome> outcomes) {
  const Eigen::Index states = graph.num_states;
  beta_.setZero(width_, states);
  tops_.resize(width_);
  if (accuracy)
    beta_accuracy_.setZero(width_, states);
  log_beta_scale_.assign(static_cast<size_t>(width_), 0);
  log_beta_top_.assign(static_cast<size_t>(width_), 0);
  column_sums_.resize(width_, classes_);
  for (Eigen::Index t = frames_; t >= 1; --t) {
    const block_matrix& e = emissions_[static_cast<size_t>(t - 1)];
    for (Eigen::Index b = 0; b < width_; ++b)
      if (lengths_[b] == t) {
        beta_.row(b) = graph.final.transpose();
        log_beta_top_[static_cast<size_t>(b)] = 0;
      }
    // The occupancies of frame t, summed by column.
    const block_matrix& alpha = alpha_[static_cast<size_t>(t)];
    product_ = alpha.cwiseProduct(beta_);
    // The overlap s_t, then the occupancies: product / s_t, whose sum is
    // checked against exp(log scales - log Z) = 1 / s_t.
    sums_ = product_.rowwise().sum();
    for (Eigen::Index b = 0; b < width_; ++b) {
      auto& outcome = outcomes[static_cast<size_t>(b)];
      tops_[b] = 0;
      if (t > lengths_[b] || !outcome.exact)
        continue;
      const double factor = std::exp(log_alpha_scale_(b, t) + log_beta_scale_[b] - log_total_[b]);
      const double log_top = log_alpha_scale_(b, t) - log_alpha_scale_(b, t - 1);
      if (!(sums_[b] >= least_overlap(log_top, log_beta_top_[static_cast<size_t>(b)],
                                      static_cast<double>(states))))
        outcome = {false, "the forward and backward passes barely overlap", t, 0, 0};
      else if (!(std::abs(sums_[b] * factor - 1) <= max_occupancy_error))
        outcome = {false, "a frame's occupancies do not sum to 1", t, 0, 0};
      else
        tops_[b] = factor;
    }
    product_.array().colwise() *= tops_.array();
    column_sums_.setZero();
    if (accuracy) {
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b)
          column_sums_(b, graph.emission[q]) +=
              product_(b, q) *
              (alpha_accuracy_[static_cast<size_t>(t)](b, q) + beta_accuracy_(b, q) -
               outcomes[static_cast<size_t>(b)].expected_accuracy);
    } else {
      for (Eigen::Index q = 0; q < states; ++q)
        column_sums_.col(graph.emission[q]) += product_.col(q);
    }
    for (Eigen::Index b = 0; b < width_; ++b)
      if (t <= lengths_[b] && outcomes[static_cast<size_t>(b)].exact)
        block[static_cast<size_t>(b)].gradient->row(t - 1) += factor * column_sums_.row(b);

    // b_{t-1} from b_t.
    weighted_.resize(width_, states);
    for (Eigen::Index q = 0; q < states; ++q)
      weighted_.col(q) = beta_.col(q).cwiseProduct(e.col(graph.emission[q]));
    step(graph, weighted_, beta_next_, true);
    if (accuracy) {
      weighted_accuracy_.resize(width_, states);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const bool hit = t <= lengths_[b] &&
                           block[static_cast<size_t>(b)].reference[static_cast<size_t>(t - 1)] ==
                               graph.emission[q];
          weighted_accuracy_(b, q) = weighted_(b, q) * ((hit ? 1.0 : 0.0) + beta_accuracy_(b, q));
        }
      step(graph, weighted_accuracy_, accuracy_product_, true);
      beta_accuracy_next_.resize(width_, states);
      for (Eigen::Index q = 0; q < states; ++q)
        for (Eigen::Index b = 0; b < width_; ++b) {
          const double mass = beta_next_(b, q);
          beta_accuracy_next_(b, q) = mass > 0 ? accuracy_product_(b, q) / mass : 0.0;
        }
    }
    rescale(beta_next_, t, "the backward mass vanished", t - 1, outcomes,
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
