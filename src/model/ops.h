// Reference float32 operators: matmul over quantized weights, RMSNorm, RoPE,
// activations. Clear scalar code, kept as the readable twin of the fast
// kernels and for tests; the forward pass uses kernels/ for everything but
// RopeTable, DecodeRow (embedding rows, fallback formats) and SoftCap.
//
// Thread safety: pure functions; MatMul may use `n_threads` worker threads
// internally and returns after they finish.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace weft::model {

// Runs fn(begin, end) over [0, n) split into contiguous chunks on up to
// n_threads threads (the caller's thread included).
void ParallelFor(int64_t n, int n_threads,
                 const std::function<void(int64_t, int64_t)>& fn);

// y[m, r] = dot(x[m, :], W[r, :]) for m < M, r < W.rows.
// x: [M, W.cols], y: [M, W.rows]. Each weight row is decoded once for all M
// tokens (the weights dominate memory traffic).
void MatMul(const WeightMatrix& w, const float* x, int64_t m, float* y,
            int n_threads);

// Decodes row r of `w` into dst[0..w.cols).
void DecodeRow(const WeightMatrix& w, int64_t r, float* dst);

float Dot(const float* a, const float* b, int64_t n);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]; out may alias x.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);

// Rotates the first n_rot dims of each of n_heads heads of `x`
// ([n_heads, head_dim]) for position `pos`. `cos_sin` holds the table of
// RopeTable for this position.
void ApplyRope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               RopeType type, const float* cos_sin);

// cos/sin for one position: out[2*i] = cos(theta_i) * mscale,
// out[2*i+1] = sin(theta_i) * mscale for i < n_rot/2, following ggml's
// rope_yarn (linear: theta * freq_scale; YaRN: ramp between extrapolated
// and interpolated theta, mscale 1 + 0.1 ln(1/freq_scale)).
// `freq_factors` (llama3 rope_freqs) may be null.
void RopeTable(const RopeParams& p, int64_t n_rot, int32_t pos,
               const float* freq_factors, float* out);

// In place: x[i] = gelu_tanh(gate[i]) * up[i] or silu(gate[i]) * up[i].
void GatedActivation(FfnActivation act, float* gate, const float* up,
                     int64_t n);

// y = cap * tanh(y / cap) for n values.
void SoftCap(float* y, int64_t n, float cap);

}  // namespace weft::model
