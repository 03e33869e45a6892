#include "gguf/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/strings.h"

namespace weft::gguf {

namespace internal {

// Byte destination of Emit(). Counts the bytes written.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void Write(const void* p, size_t n) = 0;
  uint64_t written() const { return written_; }

  template <typename T>
  void Put(T v) {
    Write(&v, sizeof(v));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    Write(s.data(), s.size());
  }
  void Pad(uint64_t alignment) {
    static const uint8_t kZeros[256] = {};
    uint64_t pad = (alignment - written_ % alignment) % alignment;
    while (pad > 0) {
      uint64_t n = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      Write(kZeros, n);
      pad -= n;
    }
  }

 protected:
  uint64_t written_ = 0;
};

}  // namespace internal

namespace {

using internal::ByteSink;

using ull = unsigned long long;

class VectorSink : public ByteSink {
 public:
  explicit VectorSink(std::vector<uint8_t>* out) : out_(out) {}
  void Write(const void* p, size_t n) override {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
    written_ += n;
  }

 private:
  std::vector<uint8_t>* out_;
};

class FileSink : public ByteSink {
 public:
  explicit FileSink(std::FILE* f) : f_(f) {}
  void Write(const void* p, size_t n) override {
    if (n == 0 || error_ != 0) return;
    if (std::fwrite(p, 1, n, f_) != n) error_ = errno != 0 ? errno : EIO;
    written_ += n;
  }
  int error() const { return error_; }

 private:
  std::FILE* f_;
  int error_ = 0;
};

Status WriteValue(ByteSink* sink, const Value& v, int depth);

Status WriteArray(ByteSink* sink, const Array& a, int depth) {
  if (depth > 8) return InvalidArgumentError("array nesting deeper than 8");
  if (static_cast<uint32_t>(a.elem_type) >= kNumValueTypes) {
    return InvalidArgumentError("array of unknown element type");
  }
  sink->Put<uint32_t>(static_cast<uint32_t>(a.elem_type));
  sink->Put<uint64_t>(a.items.size());
  for (const Value& item : a.items) {
    if (item.type() != a.elem_type) {
      return InvalidArgumentError(StrFormat(
          "array of %s holds a %s item",
          std::string(ValueTypeName(a.elem_type)).c_str(),
          std::string(ValueTypeName(item.type())).c_str()));
    }
    RETURN_IF_ERROR(WriteValue(sink, item, depth));
  }
  return OkStatus();
}

Status WriteValue(ByteSink* sink, const Value& v, int depth) {
  return std::visit(
      [&](const auto& x) -> Status {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          sink->PutString(x);
        } else if constexpr (std::is_same_v<T, Array>) {
          return WriteArray(sink, x, depth + 1);
        } else if constexpr (std::is_same_v<T, bool>) {
          sink->Put<uint8_t>(x ? 1 : 0);
        } else {
          sink->Put<T>(x);
        }
        return OkStatus();
      },
      v.storage());
}

}  // namespace

void GgufWriter::Set(std::string key, Value value) {
  auto it = metadata_index_.find(key);
  if (it != metadata_index_.end()) {
    metadata_[it->second].value = std::move(value);
    return;
  }
  metadata_index_.emplace(key, metadata_.size());
  metadata_.push_back({std::move(key), std::move(value)});
}

namespace {

template <typename T>
Array MakeArray(ValueType type, const std::vector<T>& v) {
  Array a;
  a.elem_type = type;
  a.items.reserve(v.size());
  for (const T& x : v) a.items.emplace_back(x);
  return a;
}

}  // namespace

void GgufWriter::SetStringArray(std::string key,
                                const std::vector<std::string>& v) {
  Set(std::move(key), Value(MakeArray(ValueType::kString, v)));
}

void GgufWriter::SetFloat32Array(std::string key, const std::vector<float>& v) {
  Set(std::move(key), Value(MakeArray(ValueType::kFloat32, v)));
}

void GgufWriter::SetInt32Array(std::string key,
                               const std::vector<int32_t>& v) {
  Set(std::move(key), Value(MakeArray(ValueType::kInt32, v)));
}

Status GgufWriter::CheckTensor(const std::string& name, GgmlType type,
                               const std::vector<uint64_t>& dims,
                               uint64_t nbytes) const {
  const char* n = name.c_str();
  if (tensor_names_.count(name) != 0) {
    return InvalidArgumentError(StrFormat("duplicate tensor name '%s'", n));
  }
  std::optional<GgmlTypeTraits> traits =
      GetTypeTraits(static_cast<uint32_t>(type));
  if (!traits) {
    return InvalidArgumentError(StrFormat("tensor '%s': unknown type %u", n,
                                          static_cast<uint32_t>(type)));
  }
  if (dims.size() > static_cast<size_t>(kMaxDims)) {
    return InvalidArgumentError(
        StrFormat("tensor '%s': %zu dims > %d", n, dims.size(), kMaxDims));
  }
  uint64_t rows = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 0) {
      return InvalidArgumentError(
          StrFormat("tensor '%s': dimension %zu is 0", n, d));
    }
    if (d > 0 && __builtin_mul_overflow(rows, dims[d], &rows)) {
      return InvalidArgumentError(StrFormat("tensor '%s': too large", n));
    }
  }
  ASSIGN_OR_RETURN(uint64_t row_bytes,
                   RowBytes(type, dims.empty() ? 1 : dims[0]));
  uint64_t want = 0;
  if (__builtin_mul_overflow(row_bytes, rows, &want)) {
    return InvalidArgumentError(StrFormat("tensor '%s': too large", n));
  }
  if (want != nbytes) {
    return InvalidArgumentError(
        StrFormat("tensor '%s': %llu bytes of data, want %llu for type %s", n,
                  static_cast<ull>(nbytes), static_cast<ull>(want),
                  std::string(traits->name).c_str()));
  }
  return OkStatus();
}

Status GgufWriter::AddTensor(std::string name, GgmlType type,
                             std::vector<uint64_t> dims,
                             std::span<const uint8_t> data) {
  RETURN_IF_ERROR(CheckTensor(name, type, dims, data.size()));
  PendingTensor t{std::move(name), type, std::move(dims),
                  std::vector<uint8_t>(data.begin(), data.end()), nullptr,
                  data.size()};
  tensor_names_.insert(t.name);
  tensors_.push_back(std::move(t));
  return OkStatus();
}

Status GgufWriter::AddTensorView(std::string name, GgmlType type,
                                 std::vector<uint64_t> dims,
                                 std::span<const uint8_t> data) {
  RETURN_IF_ERROR(CheckTensor(name, type, dims, data.size()));
  PendingTensor t{std::move(name), type, std::move(dims), {}, data.data(),
                  data.size()};
  tensor_names_.insert(t.name);
  tensors_.push_back(std::move(t));
  return OkStatus();
}

Status GgufWriter::CopyFrom(const GgufFile& file) {
  version_ = file.version();
  if (file.tensors().empty()) {
    pad_without_tensors_ = file.file_size() >= file.data_offset();
  }
  for (const MetadataEntry& e : file.metadata()) Set(e.key, e.value);
  for (const TensorInfo& t : file.tensors()) {
    RETURN_IF_ERROR(AddTensorView(t.name, t.type, t.dims, t.bytes()));
  }
  return OkStatus();
}

Status GgufWriter::Emit(ByteSink* sink) const {
  if (version_ != 2 && version_ != 3) {
    return InvalidArgumentError(
        StrFormat("cannot write GGUF version %u (only 2 and 3)", version_));
  }
  uint64_t alignment = kDefaultAlignment;
  for (const MetadataEntry& e : metadata_) {
    if (e.key != "general.alignment") continue;
    if (e.value.type() != ValueType::kUint32) {
      return InvalidArgumentError("general.alignment must be a uint32");
    }
    alignment = e.value.AsUint64();
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return InvalidArgumentError(StrFormat(
          "general.alignment %llu is not a nonzero power of two",
          static_cast<ull>(alignment)));
    }
  }
  sink->Put<uint32_t>(kMagic);
  sink->Put<uint32_t>(version_);
  sink->Put<uint64_t>(tensors_.size());
  sink->Put<uint64_t>(metadata_.size());
  for (const MetadataEntry& e : metadata_) {
    sink->PutString(e.key);
    sink->Put<uint32_t>(static_cast<uint32_t>(e.value.type()));
    Status s = WriteValue(sink, e.value, 0);
    if (!s.ok()) {
      return InvalidArgumentError(StrFormat("key '%s': %s", e.key.c_str(),
                                            s.message().c_str()));
    }
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    sink->PutString(t.name);
    sink->Put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) sink->Put<uint64_t>(d);
    sink->Put<uint32_t>(static_cast<uint32_t>(t.type));
    sink->Put<uint64_t>(offset);
    offset += (t.nbytes + alignment - 1) / alignment * alignment;
  }
  if (tensors_.empty() && !pad_without_tensors_) return OkStatus();
  sink->Pad(alignment);
  for (const PendingTensor& t : tensors_) {
    std::span<const uint8_t> b = t.bytes();
    sink->Write(b.data(), b.size());
    sink->Pad(alignment);
  }
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> GgufWriter::Serialize() const {
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  RETURN_IF_ERROR(Emit(&sink));
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return InvalidArgumentError(StrFormat("%s: cannot create: %s", path.c_str(),
                                          std::strerror(errno)));
  }
  FileSink sink(f);
  Status s = Emit(&sink);
  int close_rc = std::fclose(f);
  if (!s.ok()) {
    std::remove(path.c_str());
    return Status(s.code(), StrFormat("%s: %s", path.c_str(), s.message().c_str()));
  }
  if (sink.error() != 0 || close_rc != 0) {
    int err = sink.error() != 0 ? sink.error() : errno;
    std::remove(path.c_str());
    return ResourceExhaustedError(StrFormat("%s: write failed: %s",
                                            path.c_str(), std::strerror(err)));
  }
  return OkStatus();
}

}  // namespace weft::gguf
