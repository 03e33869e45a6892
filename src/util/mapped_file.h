// A read-only memory-mapped file. Model weights are used in place (zero-copy).
//
// Thread safety: immutable after Open(); data() may be read from any thread.
// Invariant: data() stays valid until the MappedFile is destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "util/status.h"

namespace weft {

class MappedFile {
 public:
  // Maps the whole file read-only. An empty file maps to an empty span.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Drops this process's mapping of the whole pages inside [p, p + n) (a
  // hint: they are read back from the file on the next access). For data
  // copied elsewhere, e.g. weights repacked at load time, so the copies do
  // not count twice in the resident set.
  void Release(const void* p, size_t n) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace weft
