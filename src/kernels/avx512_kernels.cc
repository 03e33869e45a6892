// AVX-512 kernels: the legacy 32-element formats with VNNI (vpdpbusd, two
// blocks per zmm), float weights on zmm, BF16 weights with vdpbf16ps when
// the CPU has AVX512_BF16, the x8 layout's Q4_0/Q5_0/Q8_0 tiles with
// vpdpbusd on ymm (x8_vnni_impl.h), and a zmm bandwidth reader. Everything else in the
// AVX-512 table comes from the AVX2 files (see isa.cc).
//
// Compiled with -mavx512f/bw/vl/dq/vnni/bf16: reached only through the
// dispatch table, and the BF16 entries only when the CPU has AVX512_BF16.
// The tests also compile this file for AVX2 with every AVX-512 intrinsic
// emulated (tests/kernels/avx512_emulated.cc, SIMDe): an intrinsic SIMDe
// lacks needs an emulation there.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_vnni_impl.h"
#include "tensor/blocks.h"

// GCC 12's avx512fintrin.h builds casts and reductions on
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

using x86::Fp16;
using x86::HsumPs;

// ---- Legacy formats: u = unsigned weight bytes, w = d * (u - kOffset) ----

struct Q4_0 {
  using Block = BlockQ4_0;
  static constexpr int kOffset = 8;
  static __m256i Unpack(const Block& b) { return x86::NibblesToBytes(b.qs); }
};
struct Q5_0 {
  using Block = BlockQ5_0;
  static constexpr int kOffset = 16;
  static __m256i Unpack(const Block& b) {
    const __m256i hi = _mm256_and_si256(x86::BitsToBytes(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(x86::NibblesToBytes(b.qs), hi);
  }
};
// Signed int8 weights shifted to unsigned: u = q + 128.
struct Q8_0 {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 128;
  static __m256i Unpack(const Block& b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    return _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  }
};

static inline __m512 Pair(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

template <typename F, int NC>
void DotLegacyN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / 32;
  const typename F::Block* wb = static_cast<const typename F::Block*>(w);
  Q8x32Row x[NC];
  __m512 acc[NC];
  __m256 acc1[NC], corr[NC];
  float corr_tail[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = Q8x32RowAt(xq, stride, c, k);
    acc[c] = _mm512_setzero_ps();
    acc1[c] = corr[c] = _mm256_setzero_ps();
    corr_tail[c] = 0;
  }
  for (int64_t b0 = 0; b0 < nb; b0 += 8) {
    const int n = nb - b0 < 8 ? static_cast<int>(nb - b0) : 8;
    alignas(32) float dws[8];
    int i = 0;
    for (; i + 2 <= n; i += 2) {
      const int64_t b = b0 + i;
      dws[i] = Fp16(wb[b].d);
      dws[i + 1] = Fp16(wb[b + 1].d);
      const __m512 vdw = Pair(dws[i], dws[i + 1]);
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
      dws[i] = Fp16(wb[b].d);
      const __m256 vdw = _mm256_set1_ps(dws[i]);
      const __m256i u = F::Unpack(wb[b]);
      for (int c = 0; c < NC; ++c) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c].qs + 32 * b));
        const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a);
        const __m256 scale = _mm256_mul_ps(vdw, _mm256_broadcast_ss(x[c].d + b));
        acc1[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc1[c]);
      }
    }
    if (n == 8) {
      const __m256 vdws = _mm256_load_ps(dws);
      for (int c = 0; c < NC; ++c) {
        corr[c] = _mm256_fmadd_ps(vdws, _mm256_loadu_ps(x[c].ds + b0), corr[c]);
      }
    } else {
      for (int c = 0; c < NC; ++c) {
        for (int j = 0; j < n; ++j) corr_tail[c] += dws[j] * x[c].ds[b0 + j];
      }
    }
  }
  for (int c = 0; c < NC; ++c) {
    out[c] = _mm512_reduce_add_ps(acc[c]) + HsumPs(acc1[c]) -
             static_cast<float>(F::kOffset) * (HsumPs(corr[c]) + corr_tail[c]);
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
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(x));
}

// ---- x8 weights (Q4_0, Q5_0, Q8_0) against a panel of 8 activation rows ----
//
// The x8 tile (x8_vnni_impl.h) holds a code vector of 8 weight rows in a ymm
// and broadcasts each activation row's 4 bytes: one vpdpbusd per 32
// multiply-adds. Here a zmm's 16 lanes are (activation row i, weight row
// 2q + h) for i < 8, h < 2, lane 2i + h: the activation operand is each
// row's 4 bytes twice (a panel, packed once per MatMul by PackPanelQ8x32)
// and the code operand a 64-bit broadcast of weight rows 2q and 2q + 1's 4
// bytes: one vpdpbusd per 64 multiply-adds, twice the x8 tile's rate, and
// every lane an output. Per pair the integer block sums and the float
// operations are the x8 tile's, so the outputs are bitwise equal to it:
//   acc = fma(float(sum u*x), dw * dx, acc);  corr = fma(dw, ds, corr)
//   y = acc - offset * corr            (u = codes, w + 128 for Q8_0)

constexpr int kPanelRows = 8;
// Bytes of a panel, in Q8x32 rows (each row's data twice).
constexpr int kPanelStrideRows = 2 * kPanelRows;
// Below this M the x8 tile does fewer instructions than a padded panel.
constexpr int kPanelMinM = 5;

// Panel layout for activation rows of k elements (k / 32 = nb blocks), each
// value twice (lanes 2i and 2i + 1 are row i):
//   qs[nb][8][16][4] int8 | d[nb][16] float | ds[nb][16] float
// (elements 4j..4j+3 of block b of row i at qs[((b * 8 + j) * 16 + 2i + h) *
// 4]): 16 * (k + 8 nb) bytes, 16 Q8x32 rows' ActRowBytes at most.
void PackPanelQ8x32(const void* xq, size_t xq_stride, int nrows, int64_t k,
                    void* panel) {
  const int64_t nb = k / 32;
  int8_t* qs = static_cast<int8_t*>(panel);
  float* d = reinterpret_cast<float*>(qs + 16 * k);
  float* ds = d + 16 * nb;
  std::memset(panel, 0, static_cast<size_t>(16 * (k + 8 * nb)));
  for (int i = 0; i < nrows; ++i) {
    const Q8x32Row row = Q8x32RowAt(xq, xq_stride, i, k);
    for (int64_t b = 0; b < nb; ++b) {
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 8; ++j) {
          std::memcpy(qs + ((b * 8 + j) * 16 + 2 * i + h) * 4,
                      row.qs + 32 * b + 4 * j, 4);
        }
        d[b * 16 + 2 * i + h] = row.d[b];
        ds[b * 16 + 2 * i + h] = row.ds[b];
      }
    }
  }
}

// A group block's codes as unsigned bytes at u, [j][row]: 4 bytes of
// weight row r for elements 4j..4j+3 at u[8 * j + r] (the panel's j).
template <X8Fmt F>
static inline void UnsignedCodes(const uint8_t* gb, int32_t* u) {
  if constexpr (F == X8Fmt::kQ8_0) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      _mm512_store_si512(
          u + 16 * q,
          _mm512_xor_si512(_mm512_loadu_si512(gb + 16 + 64 * q), flip));
    }
  } else {
    // avx2::Nibbles<F, J>: lo = elements 4J.., hi = 16 + 4J.. (j = 4 + J).
    auto put = [&](auto jc) {
      constexpr int J = decltype(jc)::value;
      __m256i lo, hi;
      avx2::Nibbles<F, J>(gb, &lo, &hi);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u + 8 * J), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u + 8 * (4 + J)), hi);
    };
    put(std::integral_constant<int, 0>{});
    put(std::integral_constant<int, 1>{});
    put(std::integral_constant<int, 2>{});
    put(std::integral_constant<int, 3>{});
  }
}

// A zeroed register per call: the zeroing idiom (vpxord x, x, x) is done at
// register renaming, where copies of one zeroed register (what the compiler
// makes of repeated _mm512_setzero_si512) each take a vector port.
static inline __m512i Zero() {
#if defined(__AVX512F__)
  __m512i z;
  asm volatile("vpxord %0, %0, %0" : "=v"(z));
  return z;
#else  // the emulated build (tests/kernels/avx512_emulated.cc)
  return _mm512_setzero_si512();
#endif
}

// 64 bits at p broadcast (a load-port-only vpbroadcastq).
static inline __m512i Bcast8(const void* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}
static inline __m512 Bcast8Ps(const float* p) {
  return _mm512_castsi512_ps(Bcast8(p));
}

// TileFn for one x8 group of format F (nr <= 8 rows) against one panel (nc
// <= 8 rows).
template <X8Fmt F>
void PanelTile(int64_t k, const void* w, size_t /*w_stride*/, int nr,
               const void* panel, size_t /*xq_stride*/, int nc, float* y,
               size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = F == X8Fmt::kQ8_0 ? 128.0f : kX8Offset<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const int8_t* qs = static_cast<const int8_t*>(panel);
  const float* pd = reinterpret_cast<const float*>(qs + 16 * k);
  const float* pds = pd + 16 * nb;
  // acc[q], corr[q]: weight rows 2q, 2q + 1 (lanes as above).
  __m512 acc[4], corr[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) acc[q] = corr[q] = _mm512_setzero_ps();
  // The codes of kChunk blocks as unsigned bytes, [block][j][row] (the
  // group's order), and their weight scales, written a chunk ahead of the
  // products that read them back as broadcasts (a broadcast load takes a
  // load port only, where the compiler's register shuffles would take the
  // vector ports, and a load right after its store could wait on it).
  constexpr int kChunk = 16;
  alignas(64) int32_t u[kChunk][8 * 8];
  alignas(64) float dw[kChunk][8];
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, nb - b0));
    for (int i = 0; i < n; ++i) {
      const uint8_t* gb = g + (b0 + i) * kGB;
      avx2::PrefetchAhead<kGB>(gb);
      _mm256_store_ps(dw[i], _mm256_cvtph_ps(_mm_loadu_si128(
                                 reinterpret_cast<const __m128i*>(gb))));
      UnsignedCodes<F>(gb, u[i]);
    }
    asm volatile("" : "+m"(u), "+m"(dw));
    for (int i = 0; i < n; ++i) {
      const int64_t b = b0 + i;
      // Two chains per weight-row pair (even and odd j), added at the end
      // of the block: 8 vpdpbusd chains in flight.
      __m512i s[4][2];
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) s[q][0] = Zero(), s[q][1] = Zero();
      const int8_t* xb = qs + b * 8 * 64;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i a = _mm512_loadu_si512(xb + j * 64);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          s[q][j & 1] =
              _mm512_dpbusd_epi32(s[q][j & 1], Bcast8(&u[i][8 * j + 2 * q]), a);
        }
      }
      const __m512 dx = _mm512_loadu_ps(pd + b * 16);
      const __m512 dsx = _mm512_loadu_ps(pds + b * 16);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m512 wq = Bcast8Ps(&dw[i][2 * q]);
        acc[q] = _mm512_fmadd_ps(
            _mm512_cvtepi32_ps(_mm512_add_epi32(s[q][0], s[q][1])),
            _mm512_mul_ps(wq, dx), acc[q]);
        corr[q] = _mm512_fmadd_ps(wq, dsx, corr[q]);
      }
    }
  }
  // Lane 2i + h of t[q]: y[i][2q + h].
  alignas(64) float t[4][16];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    _mm512_store_ps(t[q],
                    _mm512_fnmadd_ps(_mm512_set1_ps(kOffset), corr[q], acc[q]));
  }
  for (int i = 0; i < nc; ++i) {
    float* yi = y + i * y_stride;
    if (nr == 8) {
      for (int q = 0; q < 4; ++q) std::memcpy(yi + 2 * q, &t[q][2 * i], 8);
    } else {
      for (int r = 0; r < nr; ++r) yi[r] = t[r / 2][2 * i + r % 2];
    }
  }
}

template <template <int> class K>
void DotCols(int64_t k, const void* w, const void* xq, size_t stride, int nc,
             float* out) {
  switch (nc) {
    case 1: K<1>::Run(k, w, xq, stride, out); break;
    case 2: K<2>::Run(k, w, xq, stride, out); break;
    case 3: K<3>::Run(k, w, xq, stride, out); break;
    default: K<4>::Run(k, w, xq, stride, out); break;
  }
}

template <typename F>
struct LegacyK {
  template <int NC>
  struct K {
    static void Run(int64_t k, const void* w, const void* x, size_t s, float* o) {
      DotLegacyN<F, NC>(k, w, x, s, o);
    }
  };
};
template <typename L>
struct FloatK {
  template <int NC>
  struct K {
    static void Run(int64_t k, const void* w, const void* x, size_t s, float* o) {
      DotFloatN<L, NC>(k, w, x, s, o);
    }
  };
};
template <int NC>
struct BF16K {
  static void Run(int64_t k, const void* w, const void* x, size_t s, float* o) {
    DotBF16N<NC>(k, w, x, s, o);
  }
};

}  // namespace

void Fill(KernelTable* t, bool bf16) {
  auto set = [t](WeightFormat f, ActFormat act, QuantizeActFn q, DotFn d) {
    t->matmul[static_cast<int>(f)] = MatMulKernel{act, q, d};
  };
  // Activation quantization stays the AVX2 one (identical bytes).
  // (Q8_0's: the AVX2 Q4_0 entry reads pair order, these kernels plain Q8x32.)
  const QuantizeActFn q8 = t->matmul[static_cast<int>(WeightFormat::kQ8_0)].quantize;
  set(WeightFormat::kQ4_0, ActFormat::kQ8x32, q8, DotCols<LegacyK<Q4_0>::K>);
  set(WeightFormat::kQ5_0, ActFormat::kQ8x32, q8, DotCols<LegacyK<Q5_0>::K>);
  set(WeightFormat::kQ8_0, ActFormat::kQ8x32, q8, DotCols<LegacyK<Q8_0>::K>);
  set(WeightFormat::kF32, ActFormat::kF32, nullptr, DotCols<FloatK<LoadF32>::K>);
  set(WeightFormat::kF16, ActFormat::kF32, nullptr, DotCols<FloatK<LoadF16>::K>);
  if (bf16) {
    set(WeightFormat::kBF16, ActFormat::kBF16, QuantizeBF16, DotCols<BF16K>);
  } else {
    set(WeightFormat::kBF16, ActFormat::kF32, nullptr, DotCols<FloatK<LoadBF16>::K>);
  }
  // The x8 layout's 32-element formats with vpdpbusd (x8_vnni_impl.h); the
  // K-quant x8 tiles stay AVX2's.
  auto set_x8 = [t, q8](WeightFormat f, TileFn tile) {
    t->matmul_x8[static_cast<int>(f)] =
        MatMulKernel{ActFormat::kQ8x32, q8, nullptr, tile, kX8Rows, x8_vnni::kCols};
  };
  set_x8(WeightFormat::kQ4_0, x8_vnni::TileN<X8Fmt::kQ4_0>);
  set_x8(WeightFormat::kQ5_0, x8_vnni::TileN<X8Fmt::kQ5_0>);
  set_x8(WeightFormat::kQ8_0, x8_vnni::TileN<X8Fmt::kQ8_0>);
  auto set_panel = [t](WeightFormat f, TileFn tile) {
    MatMulKernel& kern = t->matmul_x8[static_cast<int>(f)];
    kern.pack_panel = PackPanelQ8x32;
    kern.panel_tile = tile;
    kern.panel_rows = kPanelRows;
    kern.panel_stride_rows = kPanelStrideRows;
    kern.panel_min_m = kPanelMinM;
  };
  set_panel(WeightFormat::kQ4_0, PanelTile<X8Fmt::kQ4_0>);
  set_panel(WeightFormat::kQ5_0, PanelTile<X8Fmt::kQ5_0>);
  set_panel(WeightFormat::kQ8_0, PanelTile<X8Fmt::kQ8_0>);
  t->read_bytes = ReadBytes;
  // vpdpbusd and zmm FMAs outrun the AVX2 sequences: no ceiling to report.
  t->peak_loop = nullptr;
}

}  // namespace weft::kernels::avx512
