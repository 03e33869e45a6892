#include "kernels/thread_pool.h"

#include "util/check.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WEFT_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define WEFT_PAUSE() asm volatile("yield" ::: "memory")
#else
#define WEFT_PAUSE() std::this_thread::yield()
#endif

namespace weft::kernels {

ThreadPool::ThreadPool(ThreadPoolOptions options)
    : spin_iterations_(options.spin_iterations) {
  int n = options.num_threads;
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  workers_.reserve(n - 1);
  for (int i = 1; i < n; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Drain(int thread) {
  for (;;) {
    const int64_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) return;
    fn_(ctx_, t, thread);
  }
}

void ThreadPool::Run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  CHECK(!busy_.exchange(true, std::memory_order_acquire))
      << "ThreadPool::ParallelFor is not reentrant";
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  finished_.store(0, std::memory_order_relaxed);
  // seq_cst pairs with the sleepers_ increment + re-check in WorkerLoop: a
  // worker either sees the new generation or is counted and woken.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  Drain(0);
  const int n_workers = static_cast<int>(workers_.size());
  for (int i = 1; finished_.load(std::memory_order_acquire) < n_workers; ++i) {
    if ((i & 255) == 0) {
      std::this_thread::yield();
    } else {
      WEFT_PAUSE();
    }
  }
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::WorkerLoop(int index) {
  // generation_ starts at 0 and only Run and the destructor bump it; a job
  // may already be posted before this thread first looks.
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < spin_iterations_; ++i) {
      // Yield now and then: with more threads than free cores, a spinning
      // worker must not starve the thread that has the work.
      if ((i & 255) == 255) {
        std::this_thread::yield();
      } else {
        WEFT_PAUSE();
      }
      g = generation_.load(std::memory_order_acquire);
    }
    while (g == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      g = generation_.load(std::memory_order_seq_cst);
      if (g == seen) generation_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    Drain(index);
    finished_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace weft::kernels
