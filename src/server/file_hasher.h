// FileHasher: the SHA-256 of a file, computed once on a background thread
// at the lowest CPU priority, so that a server reports which model file it
// runs (/v1/effective-config, `weft bench serve` headers) without delaying
// its start: hashing a 40 GB file takes tens of seconds.
//
// Thread safety: result() may be called from any thread. The destructor
// cancels an unfinished hash (checked every 1 MiB) and joins the thread.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace weft::server {

class FileHasher {
 public:
  explicit FileHasher(std::string path);
  ~FileHasher();
  FileHasher(const FileHasher&) = delete;
  FileHasher& operator=(const FileHasher&) = delete;

  // The lowercase hex digest once computed; nullopt until then, and for
  // good if the file could not be read (logged as a warning).
  std::optional<std::string> result() const;

 private:
  void Run();

  const std::string path_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mu_;
  std::optional<std::string> digest_;  // guarded by mu_
  std::thread thread_;                 // last: starts after the rest exists
};

}  // namespace weft::server
