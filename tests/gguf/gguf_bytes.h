// Test helper: builds GGUF byte strings by hand, field by field, so tests can
// produce files the writer would refuse to write.
//
// Thread safety: none; one builder per test.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace weft::gguf::testing {

class GgufBytes {
 public:
  GgufBytes& U8(uint8_t v) { return Raw(&v, 1); }
  GgufBytes& U32(uint32_t v) { return Raw(&v, 4); }
  GgufBytes& U64(uint64_t v) { return Raw(&v, 8); }
  GgufBytes& F32(float v) { return Raw(&v, 4); }
  GgufBytes& Str(const std::string& s) {
    U64(s.size());
    return Raw(s.data(), s.size());
  }
  GgufBytes& Raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  GgufBytes& Zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  // Zero padding up to a multiple of `a`.
  GgufBytes& PadTo(size_t a) {
    while (bytes_.size() % a != 0) bytes_.push_back(0);
    return *this;
  }
  // "GGUF", version, tensor count, kv count.
  GgufBytes& Header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return U32(kMagic).U32(version).U64(n_tensors).U64(n_kv);
  }
  // A metadata entry with a uint32 value.
  GgufBytes& KvU32(const std::string& key, uint32_t v) {
    return Str(key).U32(static_cast<uint32_t>(ValueType::kUint32)).U32(v);
  }
  GgufBytes& KvStr(const std::string& key, const std::string& v) {
    return Str(key).U32(static_cast<uint32_t>(ValueType::kString)).Str(v);
  }
  // A tensor info.
  GgufBytes& Tensor(const std::string& name, std::vector<uint64_t> dims,
                    GgmlType type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) U64(d);
    return U32(static_cast<uint32_t>(type)).U64(offset);
  }

  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& mutable_bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Parses `bytes` under the name "t.gguf".
inline StatusOr<std::unique_ptr<GgufFile>> ParseBytes(
    const std::vector<uint8_t>& bytes) {
  return GgufFile::Parse("t.gguf", std::span<const uint8_t>(bytes));
}

}  // namespace weft::gguf::testing
