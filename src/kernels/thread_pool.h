// A low-overhead fork-join pool for the kernels: ParallelFor hands out task
// indices through one atomic counter to the calling thread and the workers.
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
// Thread safety: ParallelFor may be called from one thread at a time (it is
// CHECKed); the pool is otherwise immutable. Workers only run tasks while a
// ParallelFor call is in progress, and ParallelFor returns after every task
// has finished (all writes of the tasks are visible to the caller).
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

 private:
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);

  void Run(int64_t n_tasks, TaskFn fn, void* ctx);
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
