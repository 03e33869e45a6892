// Scalar reference (de)quantization of one row for every GGUF weight format.
// These are the twins that SIMD kernels are tested against; they favour
// clarity over speed and follow ggml's reference code bit for bit.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "tensor/types.h"
#include "util/status.h"

namespace weft {

// Types with a reference dequantizer: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS, MXFP4.
bool CanDequantize(GgmlType type);
// Types with a reference quantizer: the same list (ggml's *_ref quantizers,
// no importance matrix).
bool CanQuantize(GgmlType type);

// dst[0..n) = the n elements encoded at src.
// Error if the type has no dequantizer or n is not a multiple of its block.
Status DequantizeRow(GgmlType type, const void* src, float* dst, int64_t n);

// Encodes src[0..n) at dst (RowBytes(type, n) bytes).
// Error if the type has no quantizer or n is not a multiple of its block.
Status QuantizeRow(GgmlType type, const float* src, void* dst, int64_t n);

// Quantizes a row-major matrix of `rows` x `cols` floats into `rows` rows of
// RowBytes(type, cols) bytes each, spreading the rows over up to
// `num_threads` threads (0: one per hardware thread). The bytes are the same
// as QuantizeRow row by row, whatever the thread count.
Status QuantizeRows(GgmlType type, const float* src, void* dst, int64_t rows,
                    int64_t cols, int num_threads = 0);

}  // namespace weft
