// Internal: the GGUF byte parser behind GgufFile::Parse. Not part of the
// public API; include gguf/gguf.h instead.
//
// Thread safety: one Parser per parse; not shared.
// Invariant: pos_ <= bytes_.size() at all times; every read checks the
// remaining byte count first, and every count read from the file is bounded
// by the remaining bytes before anything is reserved.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/value.h"
#include "util/status.h"

namespace weft::gguf {

// Deepest array nesting accepted (an array of arrays has depth 2).
inline constexpr int kMaxArrayDepth = 8;

class Parser {
 public:
  // `file` receives the parsed header, metadata and tensor infos.
  Parser(GgufFile* file, std::span<const uint8_t> bytes)
      : file_(file), bytes_(bytes) {}

  Status Run();

 private:
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // "<name>: offset <off>: <what>".
  Status Error(uint64_t offset, const std::string& what) const;
  // Truncation: `n` bytes needed for `what` at pos_.
  Status Truncated(uint64_t n, const char* what) const;

  Status ReadRaw(void* out, uint64_t n, const char* what);
  Status ReadU32(uint32_t* v, const char* what);
  Status ReadU64(uint64_t* v, const char* what);
  template <typename T>
  Status ReadScalar(Value* out, const char* what) {
    T v{};
    RETURN_IF_ERROR(ReadRaw(&v, sizeof(T), what));
    *out = Value(v);
    return OkStatus();
  }
  Status ReadString(std::string* s, const char* what);
  // A value of type `type`; `depth` counts enclosing arrays.
  Status ReadValue(ValueType type, int depth, Value* out);
  Status ReadArray(int depth, Value* out);
  Status ReadValueType(ValueType* type, const char* what);

  Status ParseHeader(uint64_t* tensor_count, uint64_t* kv_count);
  Status ParseMetadata(uint64_t kv_count);
  Status ParseAlignment();
  Status ParseTensorInfo(TensorInfo* t, uint64_t* offset_field_pos);
  Status ParseTensorInfos(uint64_t tensor_count);

  GgufFile* file_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  // Byte position of each tensor's offset field (for error messages).
  std::vector<uint64_t> offset_field_pos_;
  // Byte position of each metadata entry's value type field.
  std::vector<uint64_t> value_pos_;
};

}  // namespace weft::gguf
