// Y[M, N] = X[M, K] * W[N, K]^T with float activations X, weights W in a
// GGUF weight format (one row of RowBytes(type, K) bytes per output
// feature) and float Y. M is 1 for single-stream decode and up to a few
// hundred for prefill.
//
// Activations are converted once to the dot-product format the weight type
// wants (int8 Q8x32 for Q4_0/Q5_0/Q8_0, Q8_K for the K-quants, float for
// F32/F16, bf16 for BF16 on AVX512_BF16), then N is split into blocks of
// weight rows handed out to the pool's threads; for each weight block every
// M row is processed while the block is in cache, in register tiles of up to
// tile_rows weight rows x tile_cols activation rows (the kernel's own shape,
// at most kMaxTileRows x kMaxTileCols) where the table has a tile kernel
// (else kMaxDotCols activation rows per dot call; each
// weight block is decoded once for all of them). A row's result never
// depends on M, N or the thread count (kernel_table.h's bitwise contract).
//
// Thread safety: MatMul is reentrant; concurrent calls need distinct pools
// (or none) and distinct scratch (or the default thread-local one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "tensor/types.h"

namespace weft::kernels {

// Grow-only 64-byte-aligned buffer for the converted activations.
// Thread safety: none (one user at a time).
class MatMulScratch {
 public:
  // A buffer of at least `bytes` bytes (contents unspecified).
  void* Get(size_t bytes);

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t size_ = 0;
};

struct MatMulArgs {
  GgmlType w_type = GgmlType::kF32;  // weight format (MatMulSupports)
  const void* w = nullptr;           // [N, K] weight rows
  size_t w_row_bytes = 0;            // bytes between weight rows; 0: packed
  // w holds the x8 layout of the N rows (packed_x8.h: PackX8, N rounded up
  // to a multiple of 8; w_row_bytes is ignored). Q4_0, Q5_0, Q8_0, Q4_K, Q6_K only.
  bool w_x8 = false;
  const float* x = nullptr;          // [M, K] activations
  int64_t x_row_stride = 0;          // floats between X rows; 0: K
  float* y = nullptr;                // [M, N] output (must not alias X)
  int64_t y_row_stride = 0;          // floats between Y rows; 0: N
  int64_t m = 0;                     // activation rows
  int64_t n = 0;                     // weight rows (output features)
  int64_t k = 0;                     // shared inner dimension
  ThreadPool* pool = nullptr;        // null: the calling thread only
  MatMulScratch* scratch = nullptr;  // null: a thread-local scratch
};

// Whether MatMul handles weights of `type`.
bool MatMulSupports(GgmlType type);
// The table slot of a supported type.
WeightFormat ToWeightFormat(GgmlType type);

// Runs with the active ISA table (isa.h). REQUIRES (CHECKed): a supported
// w_type, K a multiple of the type's block, non-null pointers for non-empty
// shapes, strides at least the row sizes.
void MatMul(const MatMulArgs& args);
// Same with an explicit table (tests, benchmarks).
void MatMul(const KernelTable& table, const MatMulArgs& args);

// The most products of one MatMulMany call (the experts of a MoE layer run
// in one).
inline constexpr int kMaxMatMulGroup = 64;

// `count` (<= kMaxMatMulGroup) independent products in one parallel region
// (one fork-join instead of `count`), e.g. the Q, K and V projections of a
// layer. Products with the same X (pointer, M, K, stride) and activation
// format share one conversion of X. Every product must name the same pool;
// the first product's scratch is used. Results are bitwise those of
// separate MatMul calls. Y of one product must not alias X or Y of another.
void MatMulMany(const MatMulArgs* args, int count);
void MatMulMany(const KernelTable& table, const MatMulArgs* args, int count);

}  // namespace weft::kernels
