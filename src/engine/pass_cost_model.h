// PassCostModel: an online model of how long one engine iteration (schedule,
// forward, sample, update, deliver) takes, fit from the engine's own pass
// timings, so that the scheduler can size each pass to an inter-token
// latency target (SchedulerConfig::target_itl_ms).
//
//   ms = fixed + per_token * tokens + per_logit_row * logit_rows
//          + per_1k_context * context / 1000
//
// tokens: every token fed (decodes and prompt chunks: the weight-bound
// matmuls); logit_rows: sequences that sample (the LM head over the whole
// vocabulary, and sampling); context: the (query, key) pairs attention
// reads, n * p + n * (n + 1) / 2 for a chunk of n tokens starting at
// position p (a decode at position p: p + 1).
//
// Fit: exponentially weighted least squares (each pass's weight decays by
// 1 - 1 / window per later pass, so the model follows a machine whose speed
// drifts), with every coefficient >= 0: the normal equations of every
// subset of the four coefficients are solved and the feasible solution with
// the least weighted squared error wins (4 unknowns: 16 tiny solves). When
// tokens and logit rows move together (decode-only passes) the split
// between them is not identified; a light ridge on per_logit_row resolves
// it towards per_token, which over-predicts a prompt token's cost: the
// safe side for a latency target.
//
// Thread safety: none (the scheduler's; the engine's loop thread).
#pragma once

#include <array>
#include <cstdint>

namespace weft::engine {

// What a pass is made of, for the cost model.
struct PassFeatures {
  double tokens = 0;      // tokens fed
  double logit_rows = 0;  // sequences that sample
  double context = 0;     // attention (query, key) pairs

  // Adds a sequence's chunk of n tokens starting at start_pos, with
  // `logit_rows` rows of logits (1 when it samples; 1 + its draft tokens
  // when it verifies guesses).
  void Add(int start_pos, int n, int rows) {
    tokens += n;
    logit_rows += rows;
    context += ChunkContext(start_pos, n);
  }
  static double ChunkContext(int start_pos, int n) {
    const double nn = n;
    return nn * start_pos + nn * (nn + 1) / 2;
  }
};

struct PassCostCoefficients {
  double fixed_ms = 0;          // per pass
  double per_token_ms = 0;      // per token fed
  double per_logit_row_ms = 0;  // per sequence that samples
  double per_1k_context_ms = 0; // per 1,000 attention (query, key) pairs
};

// The model as the engine reports it (/v1/effective-config, the trace).
struct PassCostSnapshot {
  bool ready = false;    // enough passes seen to size passes by time
  int64_t samples = 0;   // passes observed
  PassCostCoefficients coefficients;
  double rms_ms = 0;     // fit error
};

class PassCostModel {
 public:
  // `window`: passes over which an observation's weight decays by 1/e;
  // `min_samples`: observations before ready().
  explicit PassCostModel(int window = 256, int min_samples = 16);

  // Records one pass of shape `f` that took `ms`, and refits.
  void Observe(const PassFeatures& f, double ms);
  // The fitted time of a pass of shape `f` (fixed cost included).
  double Predict(const PassFeatures& f) const;
  // The time a sequence's chunk adds to a pass (no fixed cost).
  // `rows`: its logit rows (see PassFeatures::Add).
  double ChunkMs(int start_pos, int n, int rows) const;
  // The largest n in [0, cap] whose chunk at start_pos fits in `ms`;
  // `logits_at` is the n at which the chunk reaches the end of the prompt
  // and samples (pays a logit row).
  int MaxChunkWithin(double ms, int start_pos, int logits_at, int cap) const;

  bool ready() const { return samples_ >= min_samples_; }
  int64_t samples() const { return samples_; }
  const PassCostCoefficients& coefficients() const { return coef_; }
  // The weighted root mean square error of the fit, in ms.
  double rms_error_ms() const { return rms_ms_; }
  // How much slower than predicted passes run at the tail: the 0.9
  // quantile of actual / predicted time over the last kRatioWindow passes
  // observed once ready(), within [1, 2] (1 before any). A pass sized to
  // target / Headroom() holds the target at the p90 of its noise, not at
  // its median.
  double Headroom() const;
  PassCostSnapshot snapshot() const {
    return {ready(), samples_, coef_, rms_ms_};
  }

 private:
  static constexpr int kN = 4;  // fixed, tokens, logit rows, context / 1000
  using Vec = std::array<double, kN>;
  static Vec FeatureVector(const PassFeatures& f);
  void Refit();

  static constexpr int kRatioWindow = 64;

  double decay_;
  int min_samples_;
  std::array<double, kRatioWindow> ratios_ = {};  // ring of actual / predicted
  int64_t num_ratios_ = 0;                          // ever recorded
  int64_t samples_ = 0;
  double a_[kN][kN] = {};  // sum of w x x^T
  Vec b_ = {};             // sum of w x y
  double yy_ = 0;          // sum of w y^2
  double w_ = 0;           // sum of w
  PassCostCoefficients coef_;
  double rms_ms_ = 0;
};

}  // namespace weft::engine
