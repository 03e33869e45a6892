#include "kernels/matmul.h"

#include <algorithm>
#include <cstdlib>

#include "util/check.h"

namespace weft::kernels {

void MatMulScratch::Free::operator()(void* p) const { std::free(p); }

void* MatMulScratch::Get(size_t bytes) {
  if (bytes > size_ || data_ == nullptr) {
    const size_t size = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    void* p = std::aligned_alloc(64, size);
    CHECK(p != nullptr) << "out of memory for " << size << " bytes";
    data_.reset(p);
    size_ = size;
  }
  return data_.get();
}

bool MatMulSupports(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

WeightFormat ToWeightFormat(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return WeightFormat::kF32;
    case GgmlType::kF16: return WeightFormat::kF16;
    case GgmlType::kBF16: return WeightFormat::kBF16;
    case GgmlType::kQ4_0: return WeightFormat::kQ4_0;
    case GgmlType::kQ5_0: return WeightFormat::kQ5_0;
    case GgmlType::kQ8_0: return WeightFormat::kQ8_0;
    case GgmlType::kQ4_K: return WeightFormat::kQ4_K;
    case GgmlType::kQ5_K: return WeightFormat::kQ5_K;
    case GgmlType::kQ6_K: return WeightFormat::kQ6_K;
    default: break;
  }
  CHECK(false) << "MatMul does not support weight type " << TypeName(type);
  return WeightFormat::kF32;
}

void MatMul(const MatMulArgs& args) { MatMul(Kernels(), args); }

void MatMul(const KernelTable& table, const MatMulArgs& a) {
  CHECK(a.m >= 0 && a.n >= 0 && a.k >= 0) << a.m << "x" << a.n << "x" << a.k;
  const GgmlTypeTraits& traits = TypeTraits(a.w_type);
  const MatMulKernel& kern = table.matmul[static_cast<int>(ToWeightFormat(a.w_type))];
  CHECK_EQ(a.k % traits.block_size, 0) << "K must be a multiple of the "
                                       << traits.name << " block";
  if (a.m == 0 || a.n == 0) return;
  const size_t row_bytes = static_cast<size_t>(a.k / traits.block_size) *
                           static_cast<size_t>(traits.type_size);
  const size_t w_stride = a.w_row_bytes == 0 ? row_bytes : a.w_row_bytes;
  const int64_t x_stride = a.x_row_stride == 0 ? a.k : a.x_row_stride;
  const int64_t y_stride = a.y_row_stride == 0 ? a.n : a.y_row_stride;
  CHECK(w_stride >= row_bytes && x_stride >= a.k && y_stride >= a.n);
  CHECK(a.w != nullptr && a.x != nullptr && a.y != nullptr);
  if (a.k == 0) {
    for (int64_t r = 0; r < a.m; ++r) std::fill_n(a.y + r * y_stride, a.n, 0.0f);
    return;
  }
  ThreadPool* pool = a.pool;
  const int n_threads = pool != nullptr ? pool->num_threads() : 1;

  // 1. Activations in the kernel's format.
  const void* xq = a.x;
  size_t xq_stride = static_cast<size_t>(x_stride) * sizeof(float);
  if (kern.act != ActFormat::kF32) {
    xq_stride = ActRowBytes(kern.act, a.k);
    MatMulScratch* scratch = a.scratch;
    if (scratch == nullptr) {
      thread_local MatMulScratch tls;
      scratch = &tls;
    }
    char* buf = static_cast<char*>(scratch->Get(xq_stride * static_cast<size_t>(a.m)));
    auto quantize = [&](int64_t r, int) {
      kern.quantize(a.x + r * x_stride, buf + static_cast<size_t>(r) * xq_stride, a.k);
    };
    if (pool != nullptr && a.m >= 4 * n_threads) {
      pool->ParallelFor(a.m, quantize);
    } else {
      for (int64_t r = 0; r < a.m; ++r) quantize(r, 0);
    }
    xq = buf;
  }

  // 2. Blocks of weight rows; for each, all M rows in groups of kMaxDotCols.
  // Blocks are small enough to give every thread several (load balance) and
  // to keep a block in L1/L2 while the M rows stream past it.
  int64_t rows = 16;
  while (rows > 1 && (a.n + rows - 1) / rows < 4 * n_threads) rows /= 2;
  const int64_t n_blocks = (a.n + rows - 1) / rows;
  const char* w = static_cast<const char*>(a.w);
  const char* xqc = static_cast<const char*>(xq);
  auto task = [&](int64_t blk, int) {
    const int64_t r0 = blk * rows, r1 = std::min(a.n, r0 + rows);
    float out[kMaxDotCols];
    for (int64_t c0 = 0; c0 < a.m; c0 += kMaxDotCols) {
      const int nc = static_cast<int>(std::min<int64_t>(kMaxDotCols, a.m - c0));
      const char* xc = xqc + static_cast<size_t>(c0) * xq_stride;
      for (int64_t r = r0; r < r1; ++r) {
        kern.dot(a.k, w + static_cast<size_t>(r) * w_stride, xc, xq_stride, nc, out);
        for (int c = 0; c < nc; ++c) a.y[(c0 + c) * y_stride + r] = out[c];
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(n_blocks, task);
  } else {
    for (int64_t b = 0; b < n_blocks; ++b) task(b, 0);
  }
}

}  // namespace weft::kernels
