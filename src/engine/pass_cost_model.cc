#include "engine/pass_cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace weft::engine {

namespace {

constexpr int kRowCoef = 2;  // index of per_logit_row in the vector

// Solves m x = v for the first n unknowns (Gaussian elimination with
// partial pivoting); false when m is singular.
template <int kMax>
bool Solve(double m[kMax][kMax], double v[kMax], int n, double x[kMax]) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::fabs(m[r][c]) > std::fabs(m[p][c])) p = r;
    }
    if (std::fabs(m[p][c]) < 1e-300) return false;
    if (p != c) {
      for (int k = 0; k < n; ++k) std::swap(m[p][k], m[c][k]);
      std::swap(v[p], v[c]);
    }
    for (int r = c + 1; r < n; ++r) {
      const double f = m[r][c] / m[c][c];
      for (int k = c; k < n; ++k) m[r][k] -= f * m[c][k];
      v[r] -= f * v[c];
    }
  }
  for (int c = n - 1; c >= 0; --c) {
    double s = v[c];
    for (int k = c + 1; k < n; ++k) s -= m[c][k] * x[k];
    x[c] = s / m[c][c];
  }
  return true;
}

}  // namespace

PassCostModel::PassCostModel(int window, int min_samples)
    : decay_(1.0 - 1.0 / std::max(window, 2)),
      min_samples_(std::max(min_samples, 1)) {}

PassCostModel::Vec PassCostModel::FeatureVector(const PassFeatures& f) {
  return {1.0, f.tokens, f.logit_rows, f.context / 1000.0};
}

void PassCostModel::Observe(const PassFeatures& f, double ms) {
  if (!std::isfinite(ms) || ms < 0) return;
  // The fit's prediction before this pass enters it.
  const double predicted = Predict(f);
  if (ready() && predicted > 0) ratios_[num_ratios_++ % kRatioWindow] = ms / predicted;
  // A pass far slower than the fit expects (page faults on first touch,
  // a preempted thread) would pull a squared-error fit for a whole window:
  // it counts as at most twice the prediction (+1 ms). A real slow-down
  // still moves the fit up, doubling at each pass.
  if (samples_ >= 4) ms = std::min(ms, 2 * predicted + 1.0);
  const Vec x = FeatureVector(f);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) a_[i][j] = decay_ * a_[i][j] + x[i] * x[j];
    b_[i] = decay_ * b_[i] + x[i] * ms;
  }
  yy_ = decay_ * yy_ + ms * ms;
  w_ = decay_ * w_ + 1.0;
  ++samples_;
  Refit();
}

double PassCostModel::Headroom() const {
  const int64_t n = std::min<int64_t>(num_ratios_, kRatioWindow);
  if (n == 0) return 1.0;
  std::array<double, kRatioWindow> r = ratios_;
  const int64_t k = (9 * n) / 10;  // the 0.9 quantile's rank, 0-based
  std::nth_element(r.begin(), r.begin() + k, r.begin() + n);
  return std::clamp(r[k], 1.0, 2.0);
}

void PassCostModel::Refit() {
  double trace = 0;
  for (int i = 0; i < kN; ++i) trace += a_[i][i];
  const double eps = 1e-9 * (trace / kN + 1.0);
  // See the header: split tokens/logit rows towards per_token when the
  // data cannot tell them apart.
  const double row_ridge = 1e-3 * a_[kRowCoef][kRowCoef] + eps;
  double best_err = std::numeric_limits<double>::infinity();
  Vec best = {};
  for (int mask = 1; mask < (1 << kN); ++mask) {
    int idx[kN];
    int n = 0;
    for (int i = 0; i < kN; ++i) {
      if (mask & (1 << i)) idx[n++] = i;
    }
    double m[kN][kN];
    double v[kN];
    double x[kN];
    for (int r = 0; r < n; ++r) {
      for (int c = 0; c < n; ++c) m[r][c] = a_[idx[r]][idx[c]];
      m[r][r] += idx[r] == kRowCoef ? row_ridge : eps;
      v[r] = b_[idx[r]];
    }
    if (!Solve<kN>(m, v, n, x)) continue;
    Vec theta = {};
    bool feasible = true;
    for (int r = 0; r < n; ++r) {
      if (x[r] < 0) feasible = false;
      theta[idx[r]] = x[r];
    }
    if (!feasible) continue;
    // Weighted squared error (+ the ridge terms, so subsets compare on the
    // objective they were solved for).
    double err = yy_;
    for (int i = 0; i < kN; ++i) {
      err -= 2 * theta[i] * b_[i];
      for (int j = 0; j < kN; ++j) err += theta[i] * a_[i][j] * theta[j];
      err += (i == kRowCoef ? row_ridge : eps) * theta[i] * theta[i];
    }
    if (err < best_err) {
      best_err = err;
      best = theta;
    }
  }
  if (!std::isfinite(best_err)) return;  // keep the previous fit
  coef_.fixed_ms = best[0];
  coef_.per_token_ms = best[1];
  coef_.per_logit_row_ms = best[2];
  coef_.per_1k_context_ms = best[3];
  rms_ms_ = w_ > 0 ? std::sqrt(std::max(0.0, best_err) / w_) : 0;
}

double PassCostModel::Predict(const PassFeatures& f) const {
  return coef_.fixed_ms + coef_.per_token_ms * f.tokens +
         coef_.per_logit_row_ms * f.logit_rows +
         coef_.per_1k_context_ms * f.context / 1000.0;
}

double PassCostModel::ChunkMs(int start_pos, int n, int rows) const {
  PassFeatures f;
  f.Add(start_pos, n, rows);
  return Predict(f) - coef_.fixed_ms;
}

int PassCostModel::MaxChunkWithin(double ms, int start_pos, int logits_at,
                                  int cap) const {
  // ChunkMs grows with n (coefficients >= 0): binary search the last fit.
  auto fits = [&](int n) {
    return ChunkMs(start_pos, n, n == logits_at) <= ms;
  };
  int lo = 0, hi = std::max(cap, 0);
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace weft::engine
