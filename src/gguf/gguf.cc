#include "gguf/gguf.h"

#include <limits>

#include "gguf/parser.h"
#include "util/strings.h"

namespace weft::gguf {

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  std::span<const uint8_t> bytes = mapped->bytes();
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, Parse(path, bytes));
  file->file_ = std::move(mapped);
  return file;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(
    std::string name, std::span<const uint8_t> bytes) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->bytes_ = bytes;
  Parser parser(file.get(), bytes);
  RETURN_IF_ERROR(parser.Run());
  return file;
}

const Value* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status NotFound(const std::string& file, std::string_view key) {
  return NotFoundError(StrFormat("%s: key '%s' not found", file.c_str(),
                                 CEscape(key).c_str()));
}

Status WrongType(const std::string& file, std::string_view key,
                 const Value& v, const char* want) {
  std::string have(ValueTypeName(v.type()));
  if (v.type() == ValueType::kArray) {
    have = StrFormat("array of %s",
                     std::string(ValueTypeName(v.array().elem_type)).c_str());
  }
  return InvalidArgumentError(StrFormat("%s: key '%s' has type %s, want %s",
                                        file.c_str(), CEscape(key).c_str(),
                                        have.c_str(), want));
}

Status OutOfRangeFor(const std::string& file, std::string_view key,
                     const Value& v, const char* want) {
  return InvalidArgumentError(StrFormat(
      "%s: key '%s' has type %s with value %s, which does not fit %s",
      file.c_str(), CEscape(key).c_str(),
      std::string(ValueTypeName(v.type())).c_str(), v.DebugString().c_str(),
      want));
}

// Whether integer value `v` fits in [lo, hi].
bool FitsIn(const Value& v, int64_t lo, uint64_t hi) {
  bool is_unsigned = v.type() == ValueType::kUint8 ||
                     v.type() == ValueType::kUint16 ||
                     v.type() == ValueType::kUint32 ||
                     v.type() == ValueType::kUint64;
  if (is_unsigned) return v.AsUint64() <= hi;
  int64_t x = v.AsInt64();
  if (x < lo) return false;
  return x < 0 || static_cast<uint64_t>(x) <= hi;
}

}  // namespace

StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kString) return WrongType(name_, key, *v, "string");
  return v->str();
}

StatusOr<uint32_t> GgufFile::GetUint32(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (!v->is_integer()) return WrongType(name_, key, *v, "uint32");
  if (!FitsIn(*v, 0, UINT32_MAX)) return OutOfRangeFor(name_, key, *v, "uint32");
  return static_cast<uint32_t>(v->AsUint64());
}

StatusOr<uint64_t> GgufFile::GetUint64(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (!v->is_integer()) return WrongType(name_, key, *v, "uint64");
  if (!FitsIn(*v, 0, UINT64_MAX)) return OutOfRangeFor(name_, key, *v, "uint64");
  return v->AsUint64();
}

StatusOr<int64_t> GgufFile::GetInt64(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (!v->is_integer()) return WrongType(name_, key, *v, "int64");
  if (!FitsIn(*v, INT64_MIN, INT64_MAX)) {
    return OutOfRangeFor(name_, key, *v, "int64");
  }
  return v->AsInt64();
}

StatusOr<float> GgufFile::GetFloat32(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (!v->is_float()) return WrongType(name_, key, *v, "float32");
  return static_cast<float>(v->AsDouble());
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kBool) return WrongType(name_, key, *v, "bool");
  return std::get<bool>(v->storage());
}

StatusOr<const Array*> GgufFile::GetArray(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kArray) return WrongType(name_, key, *v, "array");
  return &v->array();
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(
    std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kArray ||
      v->array().elem_type != ValueType::kString) {
    return WrongType(name_, key, *v, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->array().items.size());
  for (const Value& item : v->array().items) out.push_back(item.str());
  return out;
}

StatusOr<std::vector<float>> GgufFile::GetFloat32Array(
    std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kArray ||
      (v->array().elem_type != ValueType::kFloat32 &&
       v->array().elem_type != ValueType::kFloat64)) {
    return WrongType(name_, key, *v, "array of float32");
  }
  std::vector<float> out;
  out.reserve(v->array().items.size());
  for (const Value& item : v->array().items) {
    out.push_back(static_cast<float>(item.AsDouble()));
  }
  return out;
}

StatusOr<std::vector<int32_t>> GgufFile::GetInt32Array(
    std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return NotFound(name_, key);
  if (v->type() != ValueType::kArray) {
    return WrongType(name_, key, *v, "array of int32");
  }
  const Array& a = v->array();
  bool integer = a.elem_type != ValueType::kArray &&
                 a.elem_type != ValueType::kString &&
                 a.elem_type != ValueType::kBool &&
                 a.elem_type != ValueType::kFloat32 &&
                 a.elem_type != ValueType::kFloat64;
  if (!integer) return WrongType(name_, key, *v, "array of int32");
  std::vector<int32_t> out;
  out.reserve(a.items.size());
  for (size_t i = 0; i < a.items.size(); ++i) {
    const Value& item = a.items[i];
    if (!FitsIn(item, INT32_MIN, INT32_MAX)) {
      return InvalidArgumentError(StrFormat(
          "%s: key '%s' item %zu has value %s, which does not fit int32",
          name_.c_str(), CEscape(key).c_str(), i, item.DebugString().c_str()));
    }
    out.push_back(static_cast<int32_t>(item.AsInt64()));
  }
  return out;
}

}  // namespace weft::gguf
