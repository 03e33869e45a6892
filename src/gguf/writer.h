// GGUF writer: metadata and tensors to a file or buffer. Reading a file and
// writing back what was read (same order, same alignment, same offsets)
// reproduces it byte for byte.
//
// Thread safety: none; one writer per thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/value.h"
#include "tensor/types.h"
#include "util/status.h"

namespace weft::gguf {

namespace internal {
class ByteSink;  // byte destination (buffer or file), in writer.cc
}  // namespace internal

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

  // Like AddTensor but does not copy: `data` must stay valid until the
  // writer is destroyed or has written its output.
  Status AddTensorView(std::string name, GgmlType type,
                       std::vector<uint64_t> dims,
                       std::span<const uint8_t> data);

  // Copies every metadata entry of `file` and references every tensor (no
  // copy of tensor data: `file` must outlive the writer), in order, and
  // takes the file's version.
  Status CopyFrom(const GgufFile& file);

  // Whether a file without tensors is padded to the alignment after its
  // tensor infos (gguf-py does; older llama.cpp vocab files are not).
  // CopyFrom takes this from the file it copies.
  void set_pad_without_tensors(bool pad) { pad_without_tensors_ = pad; }

  uint32_t version() const { return version_; }
  void set_version(uint32_t version) { version_ = version; }
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }

  // The whole file, laid out as gguf-py writes it: tensor data starts at the
  // first multiple of the alignment after the tensor infos and each tensor
  // is padded with zeros to the alignment (the last one too). Errors on an
  // unsupported version, a bad general.alignment, or an array whose items do
  // not match its element type.
  StatusOr<std::vector<uint8_t>> Serialize() const;
  Status WriteFile(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> owned;         // the copy made by AddTensor
    const uint8_t* external = nullptr;  // AddTensorView's data, or null
    uint64_t nbytes = 0;
    std::span<const uint8_t> bytes() const {
      return external != nullptr ? std::span<const uint8_t>(external, nbytes)
                                 : std::span<const uint8_t>(owned);
    }
  };
  Status CheckTensor(const std::string& name, GgmlType type,
                     const std::vector<uint64_t>& dims, uint64_t nbytes) const;
  Status Emit(internal::ByteSink* sink) const;

  uint32_t version_;
  bool pad_without_tensors_ = true;
  std::vector<MetadataEntry> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;  // key -> index
  std::vector<PendingTensor> tensors_;
  std::set<std::string, std::less<>> tensor_names_;
};

}  // namespace weft::gguf
