#include "kernels/compute_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "util/check.h"
#include "util/enum_name.h"

namespace weft::kernels {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds for every thread to run `iters` iterations of `kind`.
double TimePass(const KernelTable& t, ThreadPool* pool, int kind, int64_t iters,
                std::atomic<uint64_t>* sink) {
  auto run = [&](int64_t, int) {
    sink->fetch_xor(t.peak_loop(kind, iters), std::memory_order_relaxed);
  };
  const auto start = Clock::now();
  if (pool != nullptr) {
    pool->ParallelFor(pool->num_threads(), run);
  } else {
    run(0, 0);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

ComputePeaks MeasureComputePeaks(ThreadPool* pool, double seconds,
                                 int repeats) {
  ComputePeaks peaks;
  const KernelTable& t = Kernels();
  if (t.peak_loop == nullptr) return peaks;
  const int n_threads = pool != nullptr ? pool->num_threads() : 1;
  std::atomic<uint64_t> sink{0};
  for (int kind = 0; kind < kNumPeakKinds; ++kind) {
    // Calibrate: grow a pass until it takes a tenth of `seconds`.
    int64_t iters = 1024;
    double s = TimePass(t, pool, kind, iters, &sink);
    while (s < seconds / 10 && iters < (int64_t{1} << 40)) {
      iters *= 4;
      s = TimePass(t, pool, kind, iters, &sink);
    }
    iters = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(iters) * seconds / s));
    double best = 0;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      s = TimePass(t, pool, kind, iters, &sink);
      const double macs =
          static_cast<double>(iters) * kPeakMacsPerIter * n_threads;
      best = std::max(best, macs / s / 1e9);
    }
    peaks.gmacs[kind] = best;
  }
  // Keep the loops observable.
  [[maybe_unused]] static volatile uint64_t g_sink;
  g_sink = sink.load();
  return peaks;
}

PeakKind PeakKindOf(GgmlType type) {
  // Types without MatMul kernels (e.g. Q8_1) are multiplied by the
  // model's fallback: rows decoded to float, then float dots.
  if (!MatMulSupports(type)) return PeakKind::kF32Fma;
  switch (ToWeightFormat(type)) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      return PeakKind::kF32Fma;
    case WeightFormat::kQ8_0:
    case WeightFormat::kIQ4_NL:
    case WeightFormat::kIQ4_XS:
    case WeightFormat::kMXFP4:
      return PeakKind::kInt8Signed;
    case WeightFormat::kQ4_0:
    case WeightFormat::kQ4_1:
    case WeightFormat::kQ5_0:
    case WeightFormat::kQ5_1:
    case WeightFormat::kQ2_K:
    case WeightFormat::kQ3_K:
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K:
    case WeightFormat::kQ6_K:
      return PeakKind::kInt8Unsigned;
    default:
      break;
  }
  CHECK(false) << "no matmul kernels for " << TypeName(type);
  return PeakKind::kF32Fma;
}

const char* PeakKindName(PeakKind kind) {
  static constexpr const char* kNames[] = {"int8_signed", "int8_unsigned",
                                           "f32_fma"};
  return EnumName<PeakKind::kF32Fma>(kind, kNames, "?");
}

}  // namespace weft::kernels
