// A few threads that run posted tasks in order of posting: the server's
// CPU-heavy request preparation (chat templates, tokenization) runs here,
// off the I/O threads, so that a large prompt never stalls the other
// connections.
//
// Thread safety: Post and Stop may be called from any thread.
// Invariants: after Stop returns, no task runs and none will.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weft::server {

class WorkQueue {
 public:
  // REQUIRES: threads >= 1.
  explicit WorkQueue(int threads);
  ~WorkQueue();  // Stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues fn; after Stop it is dropped (destroyed unrun).
  void Post(std::function<void()> fn);
  // Lets the running tasks finish, drops the queued ones, joins. Idempotent.
  void Stop();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace weft::server
