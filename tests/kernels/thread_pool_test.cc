#include "kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "kernels/bandwidth.h"

namespace weft::kernels {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskOnce) {
  for (int threads : {1, 2, 3, 8}) {
    for (int spin : {0, 5000}) {
      ThreadPool pool(ThreadPoolOptions{.num_threads = threads, .spin_iterations = spin});
      EXPECT_EQ(pool.num_threads(), threads);
      for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<int> bad_thread{0};
        pool.ParallelFor(n, [&](int64_t task, int thread) {
          hits[task].fetch_add(1);
          if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
        EXPECT_EQ(bad_thread.load(), 0);
      }
    }
  }
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

TEST(ThreadPoolTest, DefaultUsesHardwareThreads) {
  ThreadPool pool;
  EXPECT_GE(pool.num_threads(), 1);
}

TEST(BandwidthTest, ProbeReturnsAPositiveRate) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  const double gbs = MeasureReadBandwidth(&pool, size_t{8} << 20, 2);
  EXPECT_GT(gbs, 0.1);
}

}  // namespace
}  // namespace weft::kernels
