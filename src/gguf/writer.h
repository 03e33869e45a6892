// GGUF writer: metadata and tensors to a file or buffer. Reading a file and
// writing back what was read (same order, same alignment, same offsets)
// reproduces it byte for byte.
//
// Thread safety: none; one writer per thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/value.h"
#include "tensor/types.h"
#include "util/status.h"

namespace weft::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  // Adds or replaces a key (kept at its first position). Setting
  // "general.alignment" changes the data alignment.
  void Set(std::string key, Value value);
  void SetString(std::string key, std::string v) { Set(std::move(key), Value(std::move(v))); }
  void SetUint32(std::string key, uint32_t v) { Set(std::move(key), Value(v)); }
  void SetInt32(std::string key, int32_t v) { Set(std::move(key), Value(v)); }
  void SetFloat32(std::string key, float v) { Set(std::move(key), Value(v)); }
  void SetBool(std::string key, bool v) { Set(std::move(key), Value(v)); }
  void SetUint64(std::string key, uint64_t v) { Set(std::move(key), Value(v)); }
  void SetStringArray(std::string key, const std::vector<std::string>& v);
  void SetFloat32Array(std::string key, const std::vector<float>& v);
  void SetInt32Array(std::string key, const std::vector<int32_t>& v);

  // Adds a tensor; `data` is copied. dims in ggml order (dims[0] innermost).
  // Errors if the byte count does not match type and dims, or the name is
  // duplicate.
  Status AddTensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                   std::span<const uint8_t> data);

  // Copies every metadata entry and tensor of `file`, in order.
  Status CopyFrom(const GgufFile& file);

  StatusOr<std::vector<uint8_t>> Serialize() const;
  Status WriteFile(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };
  uint32_t version_;
  std::vector<MetadataEntry> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace weft::gguf
