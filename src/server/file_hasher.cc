#include "server/file_hasher.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "util/file_hash.h"
#include "util/log.h"

namespace weft::server {

FileHasher::FileHasher(std::string path)
    : path_(std::move(path)), thread_([this] { Run(); }) {}

FileHasher::~FileHasher() {
  cancel_ = true;
  thread_.join();
}

std::optional<std::string> FileHasher::result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return digest_;
}

void FileHasher::Run() {
  // Linux: a thread's nice value and I/O priority are its own (with its
  // tid): the lowest CPU priority and the idle I/O class (ioprio_set,
  // IOPRIO_WHO_PROCESS = 1, IOPRIO_CLASS_IDLE = 3 << 13), so that reading a
  // model file that is not in the page cache yields to inference too.
  // Failure only means it competes at normal priority.
  const long tid = syscall(SYS_gettid);
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 19);
  (void)syscall(SYS_ioprio_set, 1, static_cast<int>(tid), 3 << 13);
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::string> d = Sha256File(path_, &cancel_);
  if (!d.ok()) {
    if (d.status().code() != StatusCode::kAborted) {
      LOG(WARNING) << "model file sha256: " << d.status().ToString();
    }
    return;
  }
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  LOG(INFO) << "model file sha256 " << *d << " (" << s << " s)";
  std::lock_guard<std::mutex> lock(mu_);
  digest_ = std::move(*d);
}

}  // namespace weft::server
