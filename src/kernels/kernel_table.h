// The per-ISA function table behind matmul.h and ops.h, and the layout of the
// quantized activation rows the matmul kernels consume.
//
// Every ISA (scalar, AVX2, AVX-512) fills one KernelTable; the scalar table
// is complete and the others override what they vectorise. Tables are built
// once, lazily, and are immutable afterwards (thread-safe to read).
//
// This header is included by the ISA-specific translation units, which are
// compiled with -mavx2 / -mavx512*: it must hold only plain data types and
// `static` helpers (no templates or inline functions with external linkage,
// whose out-of-line copies the linker could pick from an AVX-512 object and
// run on a CPU without it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::kernels {

// The instruction sequences that bound the matmul kernels' arithmetic
// (compute_peak.h), as KernelTable::peak_loop's `kind`.
enum class PeakKind : int {
  kInt8Signed = 0,    // Q8_0, IQ4_NL/XS, MXFP4 weights: vpsignb, vpmaddubsw, vpmaddwd, vpaddd
  kInt8Unsigned = 1,  // unsigned codes (Q4_0/1, Q5_0/1, K-quants): vpmaddubsw, vpaddw
  kF32Fma = 2,        // float weights: one f32 FMA per 8 lanes
};
inline constexpr int kNumPeakKinds = 3;
// Multiply-adds per iteration of a peak loop.
inline constexpr int64_t kPeakMacsPerIter = 1024;

// Weight formats MatMul accepts, in table order.
enum class WeightFormat : int {
  kF32 = 0,
  kF16,
  kBF16,
  kQ4_0,
  kQ5_0,
  kQ8_0,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  kQ4_1,
  kQ5_1,
  kIQ4_NL,
  kIQ4_XS,
  kQ2_K,
  kQ3_K,
  kMXFP4,
  kCount,
};
inline constexpr int kNumWeightFormats = static_cast<int>(WeightFormat::kCount);

// How the activations X are handed to a matmul dot kernel.
enum class ActFormat : int {
  // Plain float rows (the caller's X, no copy).
  kF32 = 0,
  // bfloat16 rows, K elements padded with zeros to a multiple of 32.
  kBF16,
  // Q8x32: per 32 elements an int8 vector and a float scale. One row is
  // int8 qs[K] | float d[K/32] | float ds[K/32], where x ~= d * qs and
  // ds = d * sum(qs) of the block (for weights stored with an offset).
  kQ8x32,
  // Q8_K: K/256 BlockQ8_K (float d, int8 qs[256], int16 bsums[16]).
  kQ8K,
  // Q8x32 with the int8 part in pair order: for blocks 2i and 2i+1 (64
  // bytes) first elements 0..15 of each, then 16..31 of each, matching a
  // 256-bit load of two nibble-packed weight blocks. An odd last block is
  // padded with a zero block. Row: qs[(K/32 + 1) / 2 * 64] | d | ds.
  kQ8x32Pairs,
};

// Row `r` of Q8x32 activations whose rows lie `stride` bytes apart: its
// int8 values, block scales and block sums (the layout above).
struct Q8x32Row {
  const int8_t* qs;
  const float* d;
  const float* ds;
};
static inline Q8x32Row Q8x32RowAt(const void* xq, size_t stride, int64_t r,
                                  int64_t k) {
  const int8_t* qs = reinterpret_cast<const int8_t*>(
      static_cast<const char*>(xq) + static_cast<size_t>(r) * stride);
  const float* d = reinterpret_cast<const float*>(qs + k);
  return {qs, d, d + k / 32};
}

// The same layout for writing one row at `xq` (what QuantizeQ8x32 fills).
struct MutableQ8x32Row {
  int8_t* qs;
  float* d;
  float* ds;
};
static inline MutableQ8x32Row MutableQ8x32RowAt(void* xq, int64_t k) {
  int8_t* qs = static_cast<int8_t*>(xq);
  float* d = reinterpret_cast<float*>(qs + k);
  return {qs, d, d + k / 32};
}

// Bytes of one activation row of `k` elements in `fmt`, rounded up to 64.
static inline size_t ActRowBytes(ActFormat fmt, int64_t k) {
  size_t bytes = 0;
  switch (fmt) {
    case ActFormat::kF32: bytes = static_cast<size_t>(k) * 4; break;
    case ActFormat::kBF16: bytes = static_cast<size_t>((k + 31) / 32 * 32) * 2; break;
    case ActFormat::kQ8x32: bytes = static_cast<size_t>(k / 32) * 40; break;
    case ActFormat::kQ8K: bytes = static_cast<size_t>(k / 256) * 292; break;
    case ActFormat::kQ8x32Pairs:
      bytes = static_cast<size_t>((k / 32 + 1) / 2) * 64 + static_cast<size_t>(k / 32) * 8;
      break;
  }
  return (bytes + 63) / 64 * 64;
}

// The most activation rows one dot call handles.
inline constexpr int kMaxDotCols = 4;

// A dot kernel for a fixed count of activation rows: DotFn without nc.
using DotNFn = void (*)(int64_t k, const void* w, const void* xq, size_t xq_stride, float* out);

// The DotFn over kernels for 1, 2, 3 and kMaxDotCols activation rows: the
// one dispatch from a run-time row count that every ISA file's dot entries
// use (static: internal linkage, as this header's rule asks).
template <DotNFn k1, DotNFn k2, DotNFn k3, DotNFn k4>
static void DotByCols(int64_t k, const void* w, const void* xq, size_t xq_stride, int nc,
                      float* out) {
  static_assert(kMaxDotCols == 4, "one kernel per row count");
  switch (nc) {
    case 1: k1(k, w, xq, xq_stride, out); break;
    case 2: k2(k, w, xq, xq_stride, out); break;
    case 3: k3(k, w, xq, xq_stride, out); break;
    default: k4(k, w, xq, xq_stride, out); break;
  }
}

// Converts one float row x[0..k) into `fmt` at xq (ActRowBytes bytes).
using QuantizeActFn = void (*)(const float* x, void* xq, int64_t k);

// out[c] = dot(weight row w, activation row c) for c < nc (1..kMaxDotCols);
// activation row c starts at (const char*)xq + c * xq_stride.
using DotFn = void (*)(int64_t k, const void* w, const void* xq,
                       size_t xq_stride, int nc, float* out);

// The largest tile: weight rows x activation rows of one TileFn call (each
// kernel's own shape is MatMulKernel::tile_rows x tile_cols; a tile wider
// than its registers keeps some sums in L1).
inline constexpr int kMaxTileRows = 8;
inline constexpr int kMaxTileCols = 16;

// y[c * y_stride + r] = dot(weight row r, activation row c) for r < nr
// (1..tile_rows) and c < nc (1..tile_cols); weight row r starts at
// (const char*)w + r * w_stride, activation row c at (const char*)xq +
// c * xq_stride. Each output is bitwise what nr = nc = 1 gives for that pair
// (a row's result never depends on the rows that share the call).
using TileFn = void (*)(int64_t k, const void* w, size_t w_stride, int nr,
                        const void* xq, size_t xq_stride, int nc, float* y,
                        size_t y_stride);

// Repacks activation rows 0 .. nrows-1 (nrows >= 1; rows lie xq_stride
// bytes apart, in the kernel's ActFormat) into one panel of panel_rows rows
// at `panel` (panel_stride_rows * xq_stride bytes), the missing rows as
// zeros.
using PackPanelFn = void (*)(const void* xq, size_t xq_stride, int nrows,
                             int64_t k, void* panel);

struct MatMulKernel {
  ActFormat act = ActFormat::kF32;  // what `quantize` produces
  QuantizeActFn quantize = nullptr;  // null when act is kF32
  DotFn dot = nullptr;
  // Register-tiled kernel; null: MatMul uses `dot` (one weight row at a time).
  TileFn tile = nullptr;
  // The tile shape `tile` takes (nr <= tile_rows, nc <= tile_cols; at most
  // kMaxTileRows x kMaxTileCols). MatMul walks weight rows in steps of
  // tile_rows (the tiles' software prefetch relies on it).
  int tile_rows = kMaxTileRows;
  int tile_cols = kMaxTileCols;
  // Optional panel path, for products of at least panel_min_m activation
  // rows: MatMul repacks the quantized rows with pack_panel, panel_rows at a
  // time, and calls panel_tile as it calls `tile`, with xq = one panel and
  // nc <= panel_rows its valid rows. Each output is bitwise what `tile`
  // gives for that pair (the path never changes a row's result).
  PackPanelFn pack_panel = nullptr;  // null: no panel path
  TileFn panel_tile = nullptr;
  int panel_rows = 0;   // activation rows per panel (<= kMaxTileCols)
  int panel_stride_rows = 0;  // a panel's bytes / xq_stride (>= panel_rows)
  int panel_min_m = 0;  // smallest M that takes the panel path
  // panel_tile takes two consecutive groups a call (nr <= 2 * tile_rows;
  // the second group is read only when nr > tile_rows).
  bool panel_pairs = false;
  // panel_tile takes all M activation rows a call (nc = M; panels
  // panel_stride_rows * xq_stride bytes apart from `xq`), so that it can
  // share work on the weights among the panels.
  bool panel_all_rows = false;
  // Optional, x8 entries only: the tile over two consecutive groups (2 *
  // tile_rows weight rows, of which nr, tile_rows < nr <= 2 * tile_rows, are
  // stored; all of both groups are read), nc <= tile_cols. MatMul calls it
  // in place of two `tile` calls where a task's rows allow, outside the
  // panel path. Each output is bitwise what `tile` gives for that pair.
  TileFn pair_tile = nullptr;
  int pair_min_m = 1;  // smallest M that takes pair_tile
};

struct KernelTable {
  const char* name = "scalar";  // "scalar", "avx2", "avx512", "neon", "amx"
  MatMulKernel matmul[kNumWeightFormats];
  // Kernels for weights in the x8 layout (packed_x8.h): the formats
  // CanPackX8 takes (tile kernels with tile_rows = 8; nr < 8 on the last
  // group); the other entries are empty.
  MatMulKernel matmul_x8[kNumWeightFormats];

  // out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i] (w may be null: weight 1);
  // out may alias x.
  void (*rms_norm)(const float* x, const float* w, int64_t n, float eps,
                   float* out) = nullptr;
  // Rotates the first n_rot dims of each of n_heads heads ([n_heads,
  // head_dim]) in place; cos_sin[2i] = cos, cos_sin[2i+1] = sin of pair i.
  // neox: pairs (i, i + n_rot/2), else (2i, 2i+1).
  void (*rope)(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               bool neox, const float* cos_sin) = nullptr;
  // y[i] = silu(x[i]) (* mul[i] when mul is not null); y may alias x.
  void (*silu)(const float* x, const float* mul, float* y, int64_t n) = nullptr;
  // y[i] = gelu_tanh(x[i]) (* mul[i] when mul is not null); y may alias x.
  void (*gelu)(const float* x, const float* mul, float* y, int64_t n) = nullptr;
  // sum a[i] * b[i]; b float32 or IEEE half bits.
  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  float (*dot_f16)(const float* a, const uint16_t* b, int64_t n) = nullptr;
  // y[i] += alpha * x[i]; x float32 or IEEE half bits.
  void (*axpy_f32)(float alpha, const float* x, float* y, int64_t n) = nullptr;
  void (*axpy_f16)(float alpha, const uint16_t* x, float* y, int64_t n) = nullptr;
  // y[i] = x[i] as IEEE half bits: bitwise tensor/half.h's Fp32ToFp16
  // (round to nearest even; NaN -> the quiet NaN 0x7e00 with x's sign).
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n) = nullptr;
  // y[i] = d * qs[i] over the n / 32 Q8_0 blocks at `blocks` (n a multiple
  // of 32): bitwise the reference dequantizer (one exact conversion and one
  // product per element). Q8_0 KV rows for attention.
  void (*q8_0_to_f32)(const void* blocks, int64_t n, float* y) = nullptr;
  // Attention's score kernel: nr query rows q + r * q_stride against np
  // key rows (rows[p]: n float32 / half elements):
  //   out[r * out_stride + p] = dot(q_r, rows[p]) * scale.
  // Each score's arithmetic is a fixed function of q_r and rows[p] alone
  // (the same for every nr, np and place of the row or position among
  // them), so a score does not depend on the batch, the chunking or the
  // slicing of the context.
  // ahead: null, or np rows of the same shape the caller reads next (no
  // entry null); the SIMD kernels prefetch ahead[p] while they read
  // rows[p] (kernels/wsum_blocks.h, PrefetchSpan). Results never depend
  // on it.
  void (*scores_f32)(const float* q, int64_t q_stride, int nr,
                     const void* const* rows, const void* const* ahead, int64_t np,
                     int64_t n, float scale, float* out, int64_t out_stride) = nullptr;
  void (*scores_f16)(const float* q, int64_t q_stride, int nr,
                     const void* const* rows, const void* const* ahead, int64_t np,
                     int64_t n, float scale, float* out, int64_t out_stride) = nullptr;
  // Attention's score kernel over a key tile (keys stored transposed, so a
  // key's elements lie w halves apart and np <= 16 keys sit side by side):
  //   out[r * out_stride + p] = dot(q_r, {kt[e * w + p] : e < n}) * scale
  // for r < nr, p < np <= min(16, w). Per score: a_j = the fma chain over
  // elements e = j (mod 4) in order, then ((a0 + a1) + (a2 + a3)) * scale;
  // so a score is bitwise the same in every table and for every nr, np, w
  // and place of the key in its tile. ahead: null, or n * w halves the
  // caller reads next, prefetched among the work (results never depend on
  // it).
  void (*scores_f16t)(const float* q, int64_t q_stride, int nr, const uint16_t* kt,
                      int64_t w, int64_t np, int64_t n, float scale, float* out,
                      int64_t out_stride, const uint16_t* ahead) = nullptr;
  // For n >= 1: *m = max x[i]; in place x[i] = exp(x[i] - *m) for i < n;
  // returns their sum (an order fixed by n).
  float (*exp_sum)(float* x, int64_t n, float* m) = nullptr;
  // Attention's weighted sum: for r < nr and p = 0 .. np-1 in order,
  //   y_r += alpha[r * alpha_stride + p] * rows[p]
  // (y_r = y + r * y_stride; rows[p]: n float32 / half elements), with
  // exactly the arithmetic of that sequence of axpy_f32 (axpy_f16) calls.
  // ahead: as the score kernels' (prefetch only).
  void (*wsum_f32)(const void* const* rows, const void* const* ahead, int64_t np,
                   const float* alpha, int64_t alpha_stride, int nr, int64_t n, float* y,
                   int64_t y_stride) = nullptr;
  void (*wsum_f16)(const void* const* rows, const void* const* ahead, int64_t np,
                   const float* alpha, int64_t alpha_stride, int nr, int64_t n, float* y,
                   int64_t y_stride) = nullptr;
  // The same two over Q8_0 rows, without a dequantized copy: rows[p] holds
  // the n / 32 Q8_0 blocks of a kv head's part of a cached row (n a
  // multiple of 32). Each is bitwise this table's scores_f32 / wsum_f32
  // over the rows as q8_0_to_f32 gives them (the model mixes both paths).
  // Scalar, AVX2 and AVX-512, each following its own table's score tree
  // (NEON keeps the scalar ones); null where there is none: the caller
  // dequantizes.
  void (*scores_q8_0)(const float* q, int64_t q_stride, int nr, const void* const* rows,
                      int64_t np, int64_t n, float scale, float* out,
                      int64_t out_stride) = nullptr;
  void (*wsum_q8_0)(const void* const* rows, int64_t np, const float* alpha,
                    int64_t alpha_stride, int nr, int64_t n, float* y,
                    int64_t y_stride) = nullptr;
  // Reads n bytes (n a multiple of 64, p 64-byte aligned) and returns a
  // value that depends on every one of them (the bandwidth probe).
  uint64_t (*read_bytes)(const void* p, size_t n) = nullptr;
  // Runs `iters` iterations of the PeakKind `kind`'s bare sequence
  // (kPeakMacsPerIter multiply-adds each: weights in registers, activations
  // broadcast from L1, 8 independent accumulators) and returns a value that
  // depends on every one (the compute-ceiling probe). Null where the table
  // has none: scalar, and AVX-512, whose VNNI kernels the AVX2 loops would
  // not bound.
  uint64_t (*peak_loop)(int kind, int64_t iters) = nullptr;
};

// Every ISA file's Fill installs its dot entries through this: weight
// format f multiplied by `dot` against activations `act` made by `quantize`
// (the whole entry: a tile is installed after, by the x8 Fill functions). Defined in isa.cc, compiled without ISA flags, so
// no ISA file owns a copy the linker could hand to another.
void SetMatMul(KernelTable* t, WeightFormat f, ActFormat act, QuantizeActFn quantize, DotFn dot);

// The table of each ISA. The x86 ones exist only on x86-64 builds, the NEON
// ones only on AArch64 builds, and may only be called when the CPU
// supports them (isa.h checks).
const KernelTable* ScalarKernelTable();
const KernelTable* Avx2KernelTable();
const KernelTable* Avx512KernelTable(bool has_bf16);
// The AVX-512 table with the AMX panel path (amx_panels.cc); the CPU must
// have AMX-INT8 and the process the tile state (isa.cc).
const KernelTable* AmxKernelTable(bool has_bf16);
// AArch64 builds only; `dotprod`: the x8 tiles use SDOT (the CPU must have
// it). Both are exposed so that tests can compare them.
const KernelTable* NeonKernelTable(bool dotprod);

}  // namespace weft::kernels
