// GGUF reader (versions 2 and 3). Parses the header, metadata and tensor infos
// of a memory-mapped file and exposes tensor data as zero-copy views.
//
// The parser is defensive: on any byte string it returns a Status naming the
// file, the byte offset and what is wrong (bad magic, unsupported version,
// truncation, lengths past the end, out-of-range or overlapping tensors,
// unknown tensor types, overflowing dimensions, duplicate keys or tensor
// names, array nesting deeper than 8). Every count is bounded by the bytes
// left before anything is reserved, so memory stays a bounded multiple of the
// file size (at most one 40-byte Value per encoded byte of metadata).
// Versions 2 and 3 (identical little-endian layout) are read; version 1 and
// big-endian files are rejected.
//
// Thread safety: immutable after Open(); safe to share between threads.
// Invariant: every TensorInfo::data points inside the mapping and
// [data, data + nbytes) is within the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/value.h"
#include "tensor/types.h"
#include "util/mapped_file.h"
#include "util/status.h"

namespace weft::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

struct MetadataEntry {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  // ggml order: dims[0] is the innermost (contiguous) dimension, so a matrix
  // with N rows of K elements has dims = {K, N}.
  std::vector<uint64_t> dims;
  uint64_t offset = 0;      // relative to the start of the tensor data section
  uint64_t n_elements = 0;  // product of dims
  uint64_t nbytes = 0;      // bytes of data
  const uint8_t* data = nullptr;  // into the mapping (or the caller's buffer)

  uint64_t ne(int i) const { return i < static_cast<int>(dims.size()) ? dims[i] : 1; }
  std::span<const uint8_t> bytes() const { return {data, nbytes}; }
};

class GgufFile {
 public:
  // Maps and parses `path`.
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses a caller-owned buffer that must outlive the result (tests, fuzzing).
  // `name` is used in error messages.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(
      std::string name, std::span<const uint8_t> bytes);

  const std::string& path() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata in file order.
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  // nullptr when absent.
  const Value* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Typed accessors: NotFound when the key is missing, InvalidArgument
  // naming the key and both types when the type does not fit. Integer
  // accessors accept any integer type whose value fits.
  StatusOr<std::string> GetString(std::string_view key) const;
  StatusOr<uint32_t> GetUint32(std::string_view key) const;
  StatusOr<uint64_t> GetUint64(std::string_view key) const;
  StatusOr<int64_t> GetInt64(std::string_view key) const;
  StatusOr<float> GetFloat32(std::string_view key) const;  // f32 or f64
  StatusOr<bool> GetBool(std::string_view key) const;
  StatusOr<const Array*> GetArray(std::string_view key) const;
  StatusOr<std::vector<std::string>> GetStringArray(std::string_view key) const;
  StatusOr<std::vector<float>> GetFloat32Array(std::string_view key) const;
  StatusOr<std::vector<int32_t>> GetInt32Array(std::string_view key) const;

  // Tensors in file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;

  // MappedFile::Release for a range of a mapped file; no-op on a caller
  // buffer (Parse).
  void ReleasePages(const void* p, size_t n) const {
    if (file_ != nullptr) file_->Release(p, n);
  }

 private:
  GgufFile() = default;
  friend class Parser;

  std::unique_ptr<MappedFile> file_;  // null when parsing a caller buffer
  std::string name_;
  std::span<const uint8_t> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace weft::gguf
