// A low-overhead fork-join pool for the kernels: ParallelFor hands out task
// indices through one atomic counter to the calling thread and the workers.
// ParallelForRanges gives each thread a contiguous range of the tasks
// instead (with stealing from the back), for memory-bound loops.
// Idle workers spin (with pause) for a while after each job so that the
// back-to-back matmuls of a forward pass start within ~1 us, then sleep on a
// futex (std::atomic::wait) so an idle server burns no CPU.
//
// ParallelFor returns as soon as every task has run: it does not wait for
// workers that have not woken up yet (a worker descheduled by the OS, e.g.
// on a machine with more runnable threads than cores, would otherwise hold
// up every join; the caller simply runs the tasks itself). The task counter
// carries the job's generation in its high 32 bits, so a late worker can
// only claim tasks of the job that is current when it claims them.
//
// Thread safety: ParallelFor (and ParallelForRanges, built on it) may be
// called from one thread at a time (it is CHECKed); the pool is otherwise
// immutable. Workers only run tasks while a ParallelFor call is in
// progress, and ParallelFor returns after every task has finished (all
// writes of the tasks are visible to the caller).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace weft::kernels {

struct ThreadPoolOptions {
  // Threads that run tasks, the caller's included; 0 = one per hardware
  // thread. 1 = no worker threads (everything runs inline).
  int num_threads = 0;
  // Pause iterations an idle worker spins before sleeping (~20-50 ns each).
  int spin_iterations = 20000;
};

class ThreadPool {
 public:
  explicit ThreadPool(ThreadPoolOptions options = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads that run tasks (workers + the caller).
  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task, thread_index) for every task in [0, n_tasks) and returns
  // when all have finished. thread_index is in [0, num_threads()); 0 is the
  // calling thread. Tasks must not call ParallelFor on the same pool.
  template <typename Fn>
  void ParallelFor(int64_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    Run(n_tasks, [](void* ctx, int64_t task, int thread) {
      (*static_cast<F*>(ctx))(task, thread);
    }, const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // As ParallelFor (every task once, returns when all have finished), in
  // streaming order: [0, n_tasks) is cut into min(num_threads(),
  // kMaxRanges) contiguous ranges; the thread that claims a range runs it
  // in ascending order, then takes tasks from the back of whichever range
  // has the most left, down to where that range's owner has got, and so
  // on. For memory-bound loops whose task t reads the t-th piece of one
  // buffer, each thread then reads a few long runs, which the hardware
  // prefetchers follow, instead of interleaving its reads with the other
  // threads' (faster decode steps on Zen 3: see matmul.cc).
  template <typename Fn>
  void ParallelForRanges(int64_t n_tasks, Fn&& fn) {
    const int nr = num_threads() < kMaxRanges ? num_threads() : kMaxRanges;
    if (n_tasks < 2 * nr || n_tasks >= (int64_t{1} << 31)) {
      ParallelFor(n_tasks, fn);
      return;
    }
    RangeCursor cursors[kMaxRanges];
    for (int r = 0; r < nr; ++r) {
      cursors[r].Reset(n_tasks * r / nr, n_tasks * (r + 1) / nr);
    }
    ParallelFor(nr, [&](int64_t range, int thread) {
      int64_t task;
      while (cursors[range].TakeFront(&task)) fn(task, thread);
      for (;;) {
        int fullest = -1;
        int64_t most = 0;
        for (int r = 0; r < nr; ++r) {
          const int64_t left = cursors[r].Left();
          if (left > most) {
            most = left;
            fullest = r;
          }
        }
        if (fullest < 0) return;
        while (cursors[fullest].TakeBack(&task)) fn(task, thread);
      }
    });
  }

  // The most ranges of ParallelForRanges (with more threads than this,
  // only kMaxRanges of them take part).
  static constexpr int kMaxRanges = 64;

 private:
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);

  void Run(int64_t n_tasks, TaskFn fn, void* ctx);

  // The unclaimed tasks [front, back) of one ParallelForRanges range, in
  // one atomic word (front << 32 | back) so that a claim from either end
  // is one compare-exchange. Relaxed: the tasks' writes are published by
  // the enclosing ParallelFor's join.
  struct alignas(64) RangeCursor {
    std::atomic<uint64_t> word{0};
    void Reset(int64_t front, int64_t back) {
      word.store(static_cast<uint64_t>(front) << 32 | static_cast<uint64_t>(back),
                 std::memory_order_relaxed);
    }
    int64_t Left() const {
      const uint64_t v = word.load(std::memory_order_relaxed);
      const int64_t f = static_cast<int64_t>(v >> 32), b = static_cast<int64_t>(v & 0xffffffffu);
      return b > f ? b - f : 0;
    }
    bool TakeFront(int64_t* task) { return Take(true, task); }
    bool TakeBack(int64_t* task) { return Take(false, task); }
    bool Take(bool front, int64_t* task) {
      uint64_t v = word.load(std::memory_order_relaxed);
      for (;;) {
        const uint64_t f = v >> 32, b = v & 0xffffffffu;
        if (f >= b) return false;
        const uint64_t next = front ? (f + 1) << 32 | b : f << 32 | (b - 1);
        if (word.compare_exchange_weak(v, next, std::memory_order_relaxed)) {
          *task = static_cast<int64_t>(front ? f : b - 1);
          return true;
        }
      }
    }
  };
  void WorkerLoop(int index);
  // Runs tasks of the current job until none are left; returns how many.
  int64_t Drain(int thread);

  const int spin_iterations_;
  std::vector<std::thread> workers_;

  // A job's fields, one slot per generation parity: the caller writes the
  // slot of generation g + 1 only after job g - 1 (same slot) has finished
  // and job g has been published, so a worker whose claim (a CAS on
  // next_task_ naming the generation) succeeds has read a consistent slot.
  // Relaxed atomics: a late worker may read a slot while it is rewritten
  // (its claim then fails).
  struct Job {
    std::atomic<TaskFn> fn{nullptr};
    std::atomic<void*> ctx{nullptr};
    std::atomic<int64_t> n_tasks{0};
  };
  // Claims the next task of the current job: true with *task, *fn, *ctx
  // set, or false when the current job has no task left.
  bool Claim(int64_t* task, TaskFn* fn, void** ctx);

  Job jobs_[2];
  // (generation << 32) | next task index of the current job.
  alignas(64) std::atomic<uint64_t> next_task_{0};
  // Tasks of the current job finished by workers (reset per job).
  alignas(64) std::atomic<int64_t> done_{0};
  // Bumped per job and at shutdown; workers sleep on it.
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};  // a ParallelFor is in progress
};

}  // namespace weft::kernels
