#include "server/work_queue.h"

#include <utility>

#include "util/check.h"

namespace weft::server {

WorkQueue::WorkQueue(int threads) {
  CHECK_GE(threads, 1);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkQueue::~WorkQueue() { Stop(); }

void WorkQueue::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;  // fn is destroyed after the lock is released
    tasks_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void WorkQueue::Stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(tasks_);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // `dropped` goes out of scope here: the tasks' captures are released
  // after the threads are gone.
}

void WorkQueue::Loop() {
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      fn = std::move(tasks_.front());
      tasks_.pop_front();
    }
    fn();
  }
}

}  // namespace weft::server
