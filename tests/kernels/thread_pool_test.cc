#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kernels/bandwidth.h"
#include "kernels/compute_peak.h"
#include "kernels/isa.h"
#include "tests/kernels/tables_under_test.h"

namespace weft::kernels {
namespace {

// Runs run(pool, n, fn) (ParallelFor or ParallelForRanges) over pools of
// 1..8 threads with and without spinning and checks that every task ran
// exactly once, with a valid thread index.
template <typename Run>
void ExpectEveryTaskOnce(Run run) {
  for (int threads : {1, 2, 3, 8}) {
    for (int spin : {0, 5000}) {
      ThreadPool pool(ThreadPoolOptions{.num_threads = threads, .spin_iterations = spin});
      EXPECT_EQ(pool.num_threads(), threads);
      for (int64_t n : {0, 1, 2, 5, 7, 64, 1000, 4099}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<int> bad_thread{0};
        run(pool, n, [&](int64_t task, int thread) {
          hits[task].fetch_add(1);
          if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
        EXPECT_EQ(bad_thread.load(), 0);
      }
    }
  }
}

TEST(ThreadPoolTest, RunsEveryTaskOnce) {
  ExpectEveryTaskOnce([](ThreadPool& pool, int64_t n, auto&& fn) { pool.ParallelFor(n, fn); });
}

TEST(ThreadPoolTest, ManyBackToBackJobs) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 4, .spin_iterations = 50});
  int64_t total = 0;
  std::vector<int64_t> partial(4);
  for (int job = 0; job < 3000; ++job) {
    std::fill(partial.begin(), partial.end(), 0);
    pool.ParallelFor(job % 13, [&](int64_t task, int thread) { partial[thread] += task + 1; });
    for (int64_t p : partial) total += p;
  }
  int64_t want = 0;
  for (int job = 0; job < 3000; ++job) want += (job % 13) * (job % 13 + 1) / 2;
  EXPECT_EQ(total, want);
}

TEST(ThreadPoolTest, RangesRunEveryTaskOnce) {
  ExpectEveryTaskOnce(
      [](ThreadPool& pool, int64_t n, auto&& fn) { pool.ParallelForRanges(n, fn); });
}

// One thread: one range, run front to back.
TEST(ThreadPoolTest, RangesRunAscendingOnOneThread) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 1});
  std::vector<int64_t> order;
  pool.ParallelForRanges(100, [&](int64_t task, int) { order.push_back(task); });
  ASSERT_EQ(order.size(), 100u);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

// With two threads each reads at most a few long runs of consecutive
// tasks: ascending through each range it claims (at most 2), descending
// from the back of the other range once its own is done (at most 1 steal
// run per range it did not claim). (With more threads, two helpers taking
// from the same range's back interleave, so their runs have gaps.)
TEST(ThreadPoolTest, RangesStreamInRuns) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2, .spin_iterations = 20000});
  for (int job = 0; job < 300; ++job) {
    std::vector<std::vector<int64_t>> seen(2);
    pool.ParallelForRanges(400, [&](int64_t task, int thread) { seen[thread].push_back(task); });
    size_t total = 0;
    for (const auto& s : seen) {
      total += s.size();
      int runs = s.empty() ? 0 : 1;
      int64_t dir = 0;  // +1 / -1 once a run has two tasks
      for (size_t i = 1; i < s.size(); ++i) {
        const int64_t step = s[i] - s[i - 1];
        if (dir == 0 && (step == 1 || step == -1)) {
          dir = step;
        } else if (step != dir) {
          ++runs;
          dir = 0;
        }
      }
      EXPECT_LE(runs, 4) << "job " << job;
    }
    ASSERT_EQ(total, 400u);
  }
}

TEST(ThreadPoolTest, DefaultUsesHardwareThreads) {
  ThreadPool pool;
  EXPECT_GE(pool.num_threads(), 1);
}

TEST(BandwidthTest, ProbeReturnsAPositiveRate) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  const double gbs = MeasureReadBandwidth(&pool, size_t{8} << 20, 2);
  EXPECT_GT(gbs, 0.1);
}

// KernelTable::read_bytes: n a multiple of 64 (not of the unrolled step),
// and the value depends on every byte, on every table (the emulated
// AVX-512 one included).
TEST(BandwidthTest, ReadBytesDependsOnEveryByte) {
  constexpr size_t kMax = 9 * 64;
  alignas(64) static uint8_t buf[kMax];
  for (size_t i = 0; i < kMax; ++i) buf[i] = static_cast<uint8_t>(i * 37 + 11);
  for (const KernelTable* t : testing::TablesUnderTest()) {
    SCOPED_TRACE(t->name);
    for (size_t n : {64, 128, 192, 256, 320, 576}) {
      const uint64_t base = t->read_bytes(buf, n);
      EXPECT_EQ(t->read_bytes(buf, n), base);
      for (size_t pos = 0; pos < n; ++pos) {
        buf[pos] ^= 0x5a;
        EXPECT_NE(t->read_bytes(buf, n), base) << "byte " << pos << " of " << n;
        buf[pos] ^= 0x5a;
      }
    }
  }
}

TEST(ComputePeakTest, MeasuredWithAvx2OnlyAndLoopsAreDeterministic) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  SetIsa(Isa::kScalar);
  EXPECT_FALSE(MeasureComputePeaks(&pool, 0.001, 1).measured());
  if (IsaSupported(Isa::kAvx2)) {
    SetIsa(Isa::kAvx2);
    const ComputePeaks p = MeasureComputePeaks(&pool, 0.002, 1);
    for (int k = 0; k < kNumPeakKinds; ++k) {
      EXPECT_GT(p.gmacs[k], 0.01) << PeakKindName(static_cast<PeakKind>(k));
      // The loop's value depends on its work: same for the same count,
      // different for one more iteration.
      const auto loop = Kernels().peak_loop;
      EXPECT_EQ(loop(k, 5), loop(k, 5));
      EXPECT_NE(loop(k, 5), loop(k, 6));
    }
  }
  SetIsa(BestIsa());
}

TEST(ComputePeakTest, KindOfEachWeightType) {
  EXPECT_EQ(PeakKindOf(GgmlType::kQ8_0), PeakKind::kInt8Signed);
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_K, GgmlType::kQ5_K,
                     GgmlType::kQ6_K}) {
    EXPECT_EQ(PeakKindOf(t), PeakKind::kInt8Unsigned) << TypeName(t);
  }
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    EXPECT_EQ(PeakKindOf(t), PeakKind::kF32Fma) << TypeName(t);
  }
  EXPECT_STREQ(PeakKindName(PeakKind::kInt8Unsigned), "int8_unsigned");
}

}  // namespace
}  // namespace weft::kernels
