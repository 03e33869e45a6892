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

bool ThreadPool::Claim(int64_t* task, TaskFn* fn, void** ctx) {
  uint64_t v = next_task_.load(std::memory_order_acquire);
  for (;;) {
    const Job& job = jobs_[(v >> 32) & 1];
    const int64_t index = static_cast<int64_t>(v & 0xffffffffu);
    const int64_t n = job.n_tasks.load(std::memory_order_relaxed);
    *fn = job.fn.load(std::memory_order_relaxed);
    *ctx = job.ctx.load(std::memory_order_relaxed);
    if (index >= n) return false;
    // Success means the job was still current after the reads above (the
    // slot is rewritten only after the next generation is published).
    if (next_task_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel,
                                         std::memory_order_acquire)) {
      *task = index;
      return true;
    }
  }
}

int64_t ThreadPool::Drain(int thread) {
  int64_t ran = 0, task = 0;
  TaskFn fn = nullptr;
  void* ctx = nullptr;
  while (Claim(&task, &fn, &ctx)) {
    fn(ctx, task, thread);
    ++ran;
  }
  return ran;
}

void ThreadPool::Run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  CHECK(!busy_.exchange(true, std::memory_order_acquire))
      << "ThreadPool::ParallelFor is not reentrant";
  CHECK_LT(n_tasks, int64_t{1} << 31) << "too many tasks";
  // The previous job has finished (every task ran), so no worker can claim
  // from it; its successor's slot is free once this job is published.
  const uint32_t gen = static_cast<uint32_t>(next_task_.load(std::memory_order_relaxed) >> 32) + 1;
  Job& job = jobs_[gen & 1];
  job.fn.store(fn, std::memory_order_relaxed);
  job.ctx.store(ctx, std::memory_order_relaxed);
  job.n_tasks.store(n_tasks, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  next_task_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
  // seq_cst pairs with the sleepers_ increment + re-check in WorkerLoop: a
  // worker either sees the new generation or is counted and woken.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  const int64_t own = Drain(0);
  // Wait for the tasks other threads claimed (not for idle workers).
  for (int i = 1; own + done_.load(std::memory_order_acquire) < n_tasks; ++i) {
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
    const int64_t ran = Drain(index);
    if (ran > 0) done_.fetch_add(ran, std::memory_order_release);
  }
}

}  // namespace weft::kernels
