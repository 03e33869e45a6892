// The scale searches shared by ggml's K-quant reference quantizers. Each
// finds, for a small group of values, a scale (and for the "x" variants with
// a min, an offset) and the integer levels L that minimise a weighted
// squared (or absolute) error.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

namespace weft::quant_internal {

// Groups whose largest magnitude is below this are treated as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Symmetric levels L[i] in [0, 2*nmax) (value = scale * (L - nmax)).
// rmse_type 1 weights errors by x^2 (qw, if non-null, overrides it).
// Returns the scale (0 for an all-zero group).
float MakeQxQuants(int n, int nmax, const float* x, int8_t* L, int rmse_type,
                   const float* qw);

// 3-bit symmetric levels L[i] in [0, 2*nmax) refined by coordinate
// descent when do_rmse. Returns the scale.
float MakeQ3Quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

// Asymmetric levels L[i] in [0, nmax] with value = scale * L - *the_min,
// searched over nstep+1 candidate scales. Returns the scale.
float MakeQkx2Quants(int n, int nmax, const float* x, const float* weights,
                     uint8_t* L, float* the_min, uint8_t* Laux, float rmin,
                     float rdelta, int nstep, bool use_mad);

}  // namespace weft::quant_internal
