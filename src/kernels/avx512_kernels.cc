// AVX-512 kernels: the legacy 32-element formats (Q4_0/1, Q5_0/1, Q8_0) with VNNI (vpdpbusd, two
// blocks per zmm), float weights on zmm, BF16 weights with vdpbf16ps when
// the CPU has AVX512_BF16, the x8 layout's Q4_0/Q5_0/Q8_0 tiles with
// vpdpbusd on ymm (x8_vnni_impl.h; their panel path for M >= 5 is
// avx512_panels.cc), and a zmm bandwidth reader. Everything else in the
// AVX-512 table comes from the AVX2 files (see isa.cc).
//
// Compiled with -mavx512f/bw/vl/dq/vnni/bf16: reached only through the
// dispatch table, and the BF16 entries only when the CPU has AVX512_BF16.
// The tests also compile this file for AVX2 with every AVX-512 intrinsic
// emulated (tests/kernels/avx512_emulated.cc, SIMDe): an intrinsic SIMDe
// lacks needs an emulation there.
#include <immintrin.h>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "kernels/x86_legacy.h"
#include "kernels/x8_vnni_impl.h"
#include "tensor/blocks.h"
#include "util/check.h"

// GCC 12's avx512fintrin.h builds casts and reductions on
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

using x86::Fp16;
using x86::HsumPs;

// ---- Legacy formats: u = unsigned weight bytes, w = d * u + c ----
// c = kCorr * d (kCorr the negated code offset) or the block minimum m
// (kCorr = 1); as in avx2_matmul.cc, the c term is CorrW(block, d) * ds
// summed over blocks, times kCorr at the end.

static inline __m512 Pair(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

template <typename F, int NC>
void DotLegacyN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / 32;
  const typename F::Block* wb = static_cast<const typename F::Block*>(w);
  Q8x32Row x[NC];
  __m512 acc[NC];
  __m256 acc1[NC];
  x86::LegacyCorr<NC> corr;
  for (int c = 0; c < NC; ++c) {
    x[c] = Q8x32RowAt(xq, stride, c, k);
    acc[c] = _mm512_setzero_ps();
    acc1[c] = _mm256_setzero_ps();
  }
  for (int64_t b0 = 0; b0 < nb; b0 += 8) {
    const int n = nb - b0 < 8 ? static_cast<int>(nb - b0) : 8;
    alignas(32) float cws[8];  // the blocks' CorrW
    int i = 0;
    for (; i + 2 <= n; i += 2) {
      const int64_t b = b0 + i;
      const float d0 = Fp16(wb[b].d), d1 = Fp16(wb[b + 1].d);
      cws[i] = F::CorrW(wb[b], d0);
      cws[i + 1] = F::CorrW(wb[b + 1], d1);
      const __m512 vdw = Pair(d0, d1);
      const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(F::Unpack(wb[b])),
                                           F::Unpack(wb[b + 1]), 1);
      for (int c = 0; c < NC; ++c) {
        const __m512i a = _mm512_loadu_si512(x[c].qs + 32 * b);
        const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, a);
        const __m512 scale = _mm512_mul_ps(vdw, Pair(x[c].d[b], x[c].d[b + 1]));
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[c]);
      }
    }
    for (; i < n; ++i) {
      const int64_t b = b0 + i;
      const float d0 = Fp16(wb[b].d);
      cws[i] = F::CorrW(wb[b], d0);
      const __m256 vdw = _mm256_set1_ps(d0);
      const __m256i u = F::Unpack(wb[b]);
      for (int c = 0; c < NC; ++c) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c].qs + 32 * b));
        const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
        const __m256 scale = _mm256_mul_ps(vdw, _mm256_broadcast_ss(x[c].d + b));
        acc1[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc1[c]);
      }
    }
    corr.Add(cws, n, b0, x);
  }
  for (int c = 0; c < NC; ++c) {
    out[c] = _mm512_reduce_add_ps(acc[c]) + HsumPs(acc1[c]) + F::kCorr * corr.Sum(c);
  }
}

// ---- Float weights against float activations ----

struct LoadF32 {
  using T = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadMasked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct LoadF16 {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 LoadMasked(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
  static __m512 LoadMasked(const uint16_t* p, __mmask16 m) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
};

template <typename L, int NC>
void DotFloatN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const typename L::T* wp = static_cast<const typename L::T*>(w);
  const float* x[NC];
  __m512 acc0[NC], acc1[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = reinterpret_cast<const float*>(static_cast<const char*>(xq) + c * stride);
    acc0[c] = acc1[c] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512 w0 = L::Load(wp + i), w1 = L::Load(wp + i + 16);
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[c] + i), acc0[c]);
      acc1[c] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[c] + i + 16), acc1[c]);
    }
  }
  for (; i < k; i += 16) {
    const int64_t left = k - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff)
                                   : static_cast<__mmask16>((1u << left) - 1);
    const __m512 w0 = L::LoadMasked(wp + i, m);
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x[c] + i), acc0[c]);
    }
  }
  for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[c], acc1[c]));
}

// ---- BF16 weights against BF16 activations (vdpbf16ps) ----

void QuantizeBF16(const float* x, void* xq, int64_t k) {
  uint16_t* out = static_cast<uint16_t*>(xq);
  const int64_t padded = (k + 31) / 32 * 32;
  for (int64_t i = 0; i < padded; i += 16) {
    const int64_t left = k - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xffff)
                        : left <= 0 ? static_cast<__mmask16>(0)
                                    : static_cast<__mmask16>((1u << left) - 1);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(h));
  }
}

template <int NC>
void DotBF16N(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const uint16_t* wp = static_cast<const uint16_t*>(w);
  const uint16_t* x[NC];
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = reinterpret_cast<const uint16_t*>(static_cast<const char*>(xq) + c * stride);
    acc[c] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < k; i += 32) {
    const int64_t left = k - i;
    const __mmask32 m = left >= 32 ? static_cast<__mmask32>(0xffffffffu)
                                   : static_cast<__mmask32>((1u << left) - 1);
    const __m512i wv = _mm512_maskz_loadu_epi16(m, wp + i);
    for (int c = 0; c < NC; ++c) {
      const __m512i xv = _mm512_loadu_si512(x[c] + i);  // zero-padded to 32
      acc[c] = _mm512_dpbf16_ps(acc[c], reinterpret_cast<const __m512bh&>(xv),
                                reinterpret_cast<const __m512bh&>(wv));
    }
  }
  for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
}

uint64_t ReadBytes(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(c + i));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(c + i + 64));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(c + i + 128));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(c + i + 192));
  }
  for (; i < n; i += 64) a0 = _mm512_xor_si512(a0, _mm512_load_si512(c + i));
  const __m512i x = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
  // The lanes' sum in unsigned (wrapping) arithmetic: GCC's
  // _mm512_reduce_add_epi64 adds them as signed long long, which overflows
  // (undefined behaviour, UBSan's report) on random bytes.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, x);
  uint64_t sum = 0;
  for (uint64_t v : lanes) sum += v;
  return sum;
}

// The kernels x86_legacy.h's SetFloatAndLegacyDots sets.
struct Dots {
  template <typename L, int NC>
  static constexpr DotNFn kFloat = DotFloatN<L, NC>;
  template <typename F, int NC>
  static constexpr DotNFn kLegacy = DotLegacyN<F, NC>;
};

constexpr DotFn kBF16Dot = DotByCols<DotBF16N<1>, DotBF16N<2>, DotBF16N<3>, DotBF16N<4>>;

}  // namespace

void Fill(KernelTable* t, bool bf16) {
  // Activation quantization stays the AVX2 one (identical bytes).
  // (Q8_0's: the AVX2 Q4_0 entry reads pair order, these kernels plain Q8x32.)
  const QuantizeActFn q8 = t->matmul[static_cast<int>(WeightFormat::kQ8_0)].quantize;
  x86::SetFloatAndLegacyDots<Dots, LoadF32, LoadF16, LoadBF16>(t, q8);
  SetMatMul(t, WeightFormat::kQ8_0, ActFormat::kQ8x32, q8, x86::kLegacyDot<Dots, x86::Q8_0>);
  if (bf16) {
    SetMatMul(t, WeightFormat::kBF16, ActFormat::kBF16, QuantizeBF16, kBF16Dot);
  }
  // The x8 layout's 32-element formats and K-quants with vpdpbusd
  // (x8_vnni_impl.h).
  auto set_x8 = [t](WeightFormat f, ActFormat act, QuantizeActFn q, TileFn tile) {
    t->matmul_x8[static_cast<int>(f)] =
        MatMulKernel{act, q, nullptr, tile, kX8Rows, x8_vnni::kCols};
  };
  set_x8(WeightFormat::kQ4_0, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kQ4_0>);
  set_x8(WeightFormat::kQ5_0, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kQ5_0>);
  set_x8(WeightFormat::kQ8_0, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kQ8_0>);
  set_x8(WeightFormat::kIQ4_NL, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kIQ4_NL>);
  set_x8(WeightFormat::kQ4_1, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kQ4_1>);
  set_x8(WeightFormat::kQ5_1, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kQ5_1>);
  set_x8(WeightFormat::kMXFP4, ActFormat::kQ8x32, q8, x8_vnni::TileN<X8Fmt::kMXFP4>);
  // Q8_K activations as the AVX2 K-quant x8 entries quantize them.
  const MatMulKernel& q4k = t->matmul_x8[static_cast<int>(WeightFormat::kQ4_K)];
  CHECK(q4k.act == ActFormat::kQ8K && q4k.quantize != nullptr);
  set_x8(WeightFormat::kQ4_K, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileQ45K<false>);
  set_x8(WeightFormat::kQ5_K, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileQ45K<true>);
  set_x8(WeightFormat::kQ6_K, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileQ6K);
  set_x8(WeightFormat::kQ2_K, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileQ2K);
  set_x8(WeightFormat::kQ3_K, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileQ3K);
  set_x8(WeightFormat::kIQ4_XS, ActFormat::kQ8K, q4k.quantize, x8_vnni::kTileIQ4XS);
  FillPanels(t);  // avx512_panels.cc, over the x8 entries above
  FillPairTiles(t);    // avx512_pair_tiles.cc, likewise
  FillKQuantPairTiles(t);  // avx512_pair_kquants.cc, likewise
  FillAttention(t);    // avx512_attention.cc
  FillMXFP4(t);        // avx512_mxfp4.cc
  t->read_bytes = ReadBytes;
  // vpdpbusd and zmm FMAs outrun the AVX2 sequences: no ceiling to report.
  t->peak_loop = nullptr;
}

}  // namespace weft::kernels::avx512
