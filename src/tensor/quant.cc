#include "tensor/quant.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "tensor/half.h"
#include "tensor/quant_internal.h"
#include "util/strings.h"

namespace weft {
namespace {

using DequantFn = void (*)(const uint8_t*, float*, int64_t);
using QuantFn = void (*)(const float*, uint8_t*, int64_t);

struct BlockKernels {
  GgmlType type;
  DequantFn dequantize;
  QuantFn quantize;
};

// Plain element types work element by element (block size 1).
void DequantF32(const uint8_t* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}
void QuantF32(const float* src, uint8_t* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}
// IEEE half and bfloat16: 16-bit elements through their conversions.
template <float (*kToF32)(uint16_t)>
void DequantHalf(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = kToF32(h);
  }
}
template <uint16_t (*kFromF32)(float)>
void QuantHalf(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = kFromF32(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

#define WEFT_KERNELS(name)                                \
  {                                                       \
    GgmlType::k##name, &quant_internal::Dequantize##name, \
        &quant_internal::Quantize##name                   \
  }

constexpr BlockKernels kKernels[] = {
    {GgmlType::kF32, &DequantF32, &QuantF32},
    {GgmlType::kF16, &DequantHalf<Fp16ToFp32>, &QuantHalf<Fp32ToFp16>},
    {GgmlType::kBF16, &DequantHalf<Bf16ToFp32>, &QuantHalf<Fp32ToBf16>},
    WEFT_KERNELS(Q4_0),
    WEFT_KERNELS(Q4_1),
    WEFT_KERNELS(Q5_0),
    WEFT_KERNELS(Q5_1),
    WEFT_KERNELS(Q8_0),
    WEFT_KERNELS(Q8_1),
    WEFT_KERNELS(Q2_K),
    WEFT_KERNELS(Q3_K),
    WEFT_KERNELS(Q4_K),
    WEFT_KERNELS(Q5_K),
    WEFT_KERNELS(Q6_K),
    WEFT_KERNELS(Q8_K),
    WEFT_KERNELS(IQ4_NL),
    WEFT_KERNELS(IQ4_XS),
    WEFT_KERNELS(MXFP4),
};

#undef WEFT_KERNELS

const BlockKernels* FindKernels(GgmlType type) {
  for (const auto& k : kKernels) {
    if (k.type == type) return &k;
  }
  return nullptr;
}

// Blocks in a row of n elements, or an error.
StatusOr<int64_t> BlockCount(GgmlType type, int64_t n) {
  if (n < 0)
    return InvalidArgumentError(
        StrFormat("negative row length %lld", static_cast<long long>(n)));
  const int64_t bs = TypeTraits(type).block_size;
  if (n % bs != 0) {
    return InvalidArgumentError(StrFormat(
        "row of %lld elements is not a multiple of the %s block "
        "size %lld",
        static_cast<long long>(n), std::string(TypeName(type)).c_str(),
        static_cast<long long>(bs)));
  }
  return n / bs;
}

Status NoKernel(GgmlType type, const char* what) {
  return UnimplementedError(StrFormat("no reference %s for tensor type %s",
                                      what,
                                      std::string(TypeName(type)).c_str()));
}

}  // namespace

bool CanDequantize(GgmlType type) { return FindKernels(type) != nullptr; }
bool CanQuantize(GgmlType type) { return FindKernels(type) != nullptr; }

Status DequantizeRow(GgmlType type, const void* src, float* dst, int64_t n) {
  const BlockKernels* k = FindKernels(type);
  if (k == nullptr) return NoKernel(type, "dequantizer");
  ASSIGN_OR_RETURN(int64_t nb, BlockCount(type, n));
  k->dequantize(static_cast<const uint8_t*>(src), dst, nb);
  return OkStatus();
}

Status QuantizeRow(GgmlType type, const float* src, void* dst, int64_t n) {
  const BlockKernels* k = FindKernels(type);
  if (k == nullptr) return NoKernel(type, "quantizer");
  ASSIGN_OR_RETURN(int64_t nb, BlockCount(type, n));
  k->quantize(src, static_cast<uint8_t*>(dst), nb);
  return OkStatus();
}

Status QuantizeRows(GgmlType type, const float* src, void* dst, int64_t rows,
                    int64_t cols, int num_threads) {
  const BlockKernels* k = FindKernels(type);
  if (k == nullptr) return NoKernel(type, "quantizer");
  if (rows < 0) return InvalidArgumentError("negative row count");
  ASSIGN_OR_RETURN(int64_t nb, BlockCount(type, cols));
  const int64_t row_bytes = nb * TypeTraits(type).type_size;
  uint8_t* out = static_cast<uint8_t*>(dst);
  if (num_threads <= 0) {
    num_threads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  // Rows are independent; give each thread a contiguous range of rows.
  const int64_t threads =
      std::clamp<int64_t>(num_threads, 1, std::max<int64_t>(rows, 1));
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      k->quantize(src + r * cols, out + r * row_bytes, nb);
    }
  };
  if (threads == 1) {
    work(0, rows);
    return OkStatus();
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int64_t t = 0; t < threads; ++t) {
    pool.emplace_back(work, rows * t / threads, rows * (t + 1) / threads);
  }
  for (auto& th : pool) th.join();
  return OkStatus();
}

}  // namespace weft
