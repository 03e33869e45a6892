#include "gguf/parser.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "util/strings.h"

namespace weft::gguf {
namespace {

using ull = unsigned long long;

// Smallest on-disk size of one element of `type` (for bounding counts).
uint64_t MinEncodedSize(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kString:  // u64 length
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kArray:  // u32 type + u64 count
      return 12;
  }
  return 1;
}

// Smallest metadata entry: empty key (8) + type (4) + 1-byte value.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
// Smallest tensor info: empty name (8) + n_dims (4) + type (4) + offset (8).
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
// ggml counts elements in int64.
constexpr uint64_t kMaxElements = static_cast<uint64_t>(INT64_MAX);

}  // namespace

Status Parser::Error(uint64_t offset, const std::string& what) const {
  return InvalidArgumentError(StrFormat("%s: offset %llu: %s",
                                        file_->name_.c_str(),
                                        static_cast<ull>(offset), what.c_str()));
}

Status Parser::Truncated(uint64_t n, const char* what) const {
  return DataLossError(StrFormat(
      "%s: offset %llu: truncated file: %s needs %llu bytes, %llu left "
      "(size %llu)",
      file_->name_.c_str(), static_cast<ull>(pos_), what,
      static_cast<ull>(n), static_cast<ull>(remaining()),
      static_cast<ull>(size())));
}

Status Parser::ReadRaw(void* out, uint64_t n, const char* what) {
  if (n > remaining()) return Truncated(n, what);
  if (n > 0) std::memcpy(out, bytes_.data() + pos_, n);
  pos_ += n;
  return OkStatus();
}

Status Parser::ReadU32(uint32_t* v, const char* what) {
  return ReadRaw(v, sizeof(*v), what);
}

Status Parser::ReadU64(uint64_t* v, const char* what) {
  return ReadRaw(v, sizeof(*v), what);
}

Status Parser::ReadString(std::string* s, const char* what) {
  uint64_t at = pos_;
  uint64_t len = 0;
  RETURN_IF_ERROR(ReadU64(&len, what));
  if (len > remaining()) {
    return Error(at, StrFormat("%s length %llu past end of file (size %llu)",
                               what, static_cast<ull>(len),
                               static_cast<ull>(size())));
  }
  s->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return OkStatus();
}

Status Parser::ReadValueType(ValueType* type, const char* what) {
  uint64_t at = pos_;
  uint32_t t = 0;
  RETURN_IF_ERROR(ReadU32(&t, what));
  if (t >= kNumValueTypes) {
    return Error(at, StrFormat("unknown %s %u", what, t));
  }
  *type = static_cast<ValueType>(t);
  return OkStatus();
}

Status Parser::ReadValue(ValueType type, int depth, Value* out) {
  switch (type) {
    case ValueType::kUint8:
      return ReadScalar<uint8_t>(out, "uint8 value");
    case ValueType::kInt8:
      return ReadScalar<int8_t>(out, "int8 value");
    case ValueType::kUint16:
      return ReadScalar<uint16_t>(out, "uint16 value");
    case ValueType::kInt16:
      return ReadScalar<int16_t>(out, "int16 value");
    case ValueType::kUint32:
      return ReadScalar<uint32_t>(out, "uint32 value");
    case ValueType::kInt32:
      return ReadScalar<int32_t>(out, "int32 value");
    case ValueType::kFloat32:
      return ReadScalar<float>(out, "float32 value");
    case ValueType::kUint64:
      return ReadScalar<uint64_t>(out, "uint64 value");
    case ValueType::kInt64:
      return ReadScalar<int64_t>(out, "int64 value");
    case ValueType::kFloat64:
      return ReadScalar<double>(out, "float64 value");
    case ValueType::kBool: {
      uint64_t at = pos_;
      uint8_t b = 0;
      RETURN_IF_ERROR(ReadRaw(&b, 1, "bool value"));
      if (b > 1) return Error(at, StrFormat("invalid bool value %u", b));
      *out = Value(b == 1);
      return OkStatus();
    }
    case ValueType::kString: {
      std::string s;
      RETURN_IF_ERROR(ReadString(&s, "string"));
      *out = Value(std::move(s));
      return OkStatus();
    }
    case ValueType::kArray:
      return ReadArray(depth + 1, out);
  }
  return Error(pos_, "unknown value type");
}

Status Parser::ReadArray(int depth, Value* out) {
  uint64_t at = pos_;
  if (depth > kMaxArrayDepth) {
    return Error(at, StrFormat("array nesting deeper than %d", kMaxArrayDepth));
  }
  Array arr;
  RETURN_IF_ERROR(ReadValueType(&arr.elem_type, "array element type"));
  uint64_t count_at = pos_;
  uint64_t count = 0;
  RETURN_IF_ERROR(ReadU64(&count, "array count"));
  uint64_t min = MinEncodedSize(arr.elem_type);
  if (count > remaining() / min) {
    return Error(count_at,
                 StrFormat("array count %llu of %s past end of file (size %llu)",
                           static_cast<ull>(count),
                           std::string(ValueTypeName(arr.elem_type)).c_str(),
                           static_cast<ull>(size())));
  }
  if (arr.elem_type == ValueType::kArray && depth + 1 > kMaxArrayDepth) {
    return Error(at, StrFormat("array nesting deeper than %d", kMaxArrayDepth));
  }
  arr.items.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    RETURN_IF_ERROR(ReadValue(arr.elem_type, depth, &arr.items[i]));
  }
  *out = Value(std::move(arr));
  return OkStatus();
}

Status Parser::ParseHeader(uint64_t* tensor_count, uint64_t* kv_count) {
  if (size() < 4) {
    return Error(0, StrFormat("file too small for a GGUF header (%llu bytes)",
                              static_cast<ull>(size())));
  }
  uint32_t magic = 0;
  RETURN_IF_ERROR(ReadU32(&magic, "magic"));
  if (magic != kMagic) {
    std::string_view m(reinterpret_cast<const char*>(bytes_.data()), 4);
    return Error(0, StrFormat("bad magic \"%s\" (not a GGUF file)",
                              CEscape(m).c_str()));
  }
  uint64_t at = pos_;
  uint32_t version = 0;
  RETURN_IF_ERROR(ReadU32(&version, "version"));
  if (version == 0x02000000u || version == 0x03000000u) {
    return Error(at, "big-endian GGUF files are not supported");
  }
  if (version != 2 && version != 3) {
    return Error(at, StrFormat("unsupported GGUF version %u (only 2 and 3)",
                               version));
  }
  file_->version_ = version;
  at = pos_;
  RETURN_IF_ERROR(ReadU64(tensor_count, "tensor count"));
  uint64_t kv_at = pos_;
  RETURN_IF_ERROR(ReadU64(kv_count, "metadata count"));
  // Bound both counts by the bytes left before reserving anything.
  if (*kv_count > remaining() / kMinKvBytes) {
    return Error(kv_at, StrFormat("metadata count %llu past end of file (size %llu)",
                                  static_cast<ull>(*kv_count),
                                  static_cast<ull>(size())));
  }
  if (*tensor_count > remaining() / kMinTensorInfoBytes) {
    return Error(at, StrFormat("tensor count %llu past end of file (size %llu)",
                               static_cast<ull>(*tensor_count),
                               static_cast<ull>(size())));
  }
  return OkStatus();
}

Status Parser::ParseMetadata(uint64_t kv_count) {
  file_->metadata_.reserve(kv_count);
  for (uint64_t i = 0; i < kv_count; ++i) {
    uint64_t at = pos_;
    MetadataEntry e;
    RETURN_IF_ERROR(ReadString(&e.key, "key"));
    if (file_->metadata_index_.count(e.key) != 0) {
      return Error(at, StrFormat("duplicate key '%s'", CEscape(e.key).c_str()));
    }
    ValueType type;
    value_pos_.push_back(pos_);
    RETURN_IF_ERROR(ReadValueType(&type, "value type"));
    RETURN_IF_ERROR(ReadValue(type, 0, &e.value));
    file_->metadata_index_.emplace(e.key, file_->metadata_.size());
    file_->metadata_.push_back(std::move(e));
  }
  return OkStatus();
}

Status Parser::ParseAlignment() {
  auto it = file_->metadata_index_.find("general.alignment");
  if (it == file_->metadata_index_.end()) return OkStatus();
  const Value* v = &file_->metadata_[it->second].value;
  const uint64_t at = value_pos_[it->second];
  if (v->type() != ValueType::kUint32) {
    return Error(at, StrFormat("general.alignment has type %s, want uint32",
                                 std::string(ValueTypeName(v->type())).c_str()));
  }
  uint64_t a = v->AsUint64();
  if (a == 0 || (a & (a - 1)) != 0) {
    return Error(at, StrFormat("general.alignment %llu is not a nonzero power of two",
                                 static_cast<ull>(a)));
  }
  file_->alignment_ = static_cast<uint32_t>(a);
  return OkStatus();
}

Status Parser::ParseTensorInfo(TensorInfo* t, uint64_t* offset_field_pos) {
  uint64_t at = pos_;
  RETURN_IF_ERROR(ReadString(&t->name, "tensor name"));
  if (file_->tensor_index_.count(t->name) != 0) {
    return Error(at, StrFormat("duplicate tensor name '%s'",
                               CEscape(t->name).c_str()));
  }
  const std::string ename = CEscape(t->name);
  const char* n = ename.c_str();
  at = pos_;
  uint32_t n_dims = 0;
  RETURN_IF_ERROR(ReadU32(&n_dims, "tensor n_dims"));
  if (n_dims > static_cast<uint32_t>(kMaxDims)) {
    return Error(at, StrFormat("tensor '%s': n_dims %u > %d", n, n_dims, kMaxDims));
  }
  t->dims.resize(n_dims);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    at = pos_;
    RETURN_IF_ERROR(ReadU64(&t->dims[d], "tensor dimension"));
    if (t->dims[d] == 0) {
      return Error(at, StrFormat("tensor '%s': dimension %u is 0", n, d));
    }
    if (__builtin_mul_overflow(elements, t->dims[d], &elements) ||
        elements > kMaxElements) {
      return Error(at, StrFormat("tensor '%s': element count overflows", n));
    }
  }
  t->n_elements = elements;
  at = pos_;
  uint32_t type_id = 0;
  RETURN_IF_ERROR(ReadU32(&type_id, "tensor type"));
  std::optional<GgmlTypeTraits> traits = GetTypeTraits(type_id);
  if (!traits) {
    return Error(at, StrFormat("tensor '%s': unknown tensor type %u", n, type_id));
  }
  t->type = traits->type;
  uint64_t ne0 = t->ne(0);
  uint64_t bs = static_cast<uint64_t>(traits->block_size);
  if (ne0 % bs != 0) {
    return Error(at, StrFormat("tensor '%s': row of %llu elements is not a "
                               "multiple of the %s block size %llu",
                               n, static_cast<ull>(ne0),
                               std::string(traits->name).c_str(),
                               static_cast<ull>(bs)));
  }
  uint64_t row_bytes = 0;
  uint64_t rows = elements / ne0;
  if (__builtin_mul_overflow(ne0 / bs, static_cast<uint64_t>(traits->type_size),
                             &row_bytes) ||
      __builtin_mul_overflow(row_bytes, rows, &t->nbytes)) {
    return Error(at, StrFormat("tensor '%s': byte count overflows", n));
  }
  *offset_field_pos = pos_;
  RETURN_IF_ERROR(ReadU64(&t->offset, "tensor offset"));
  if (t->offset % file_->alignment_ != 0) {
    return Error(*offset_field_pos,
                 StrFormat("tensor '%s': offset %llu is not a multiple of the "
                           "alignment %u",
                           n, static_cast<ull>(t->offset), file_->alignment_));
  }
  return OkStatus();
}

Status Parser::ParseTensorInfos(uint64_t tensor_count) {
  file_->tensors_.reserve(tensor_count);
  offset_field_pos_.reserve(tensor_count);
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TensorInfo t;
    uint64_t offset_pos = 0;
    RETURN_IF_ERROR(ParseTensorInfo(&t, &offset_pos));
    file_->tensor_index_.emplace(t.name, file_->tensors_.size());
    file_->tensors_.push_back(std::move(t));
    offset_field_pos_.push_back(offset_pos);
  }
  // The data section starts at the next multiple of the alignment.
  uint64_t a = file_->alignment_;
  uint64_t data = pos_ + (a - pos_ % a) % a;
  file_->data_offset_ = data;
  std::vector<TensorInfo>& ts = file_->tensors_;
  if (ts.empty()) return OkStatus();
  if (data > size()) {
    return Error(pos_, StrFormat("tensor data section at %llu starts past end "
                                 "of file (size %llu)",
                                 static_cast<ull>(data),
                                 static_cast<ull>(size())));
  }
  const uint64_t avail = size() - data;
  for (size_t i = 0; i < ts.size(); ++i) {
    TensorInfo& t = ts[i];
    if (t.offset > avail || t.nbytes > avail - t.offset) {
      return Error(offset_field_pos_[i],
                   StrFormat("tensor '%s': data [%llu, +%llu) past end of file "
                             "(data section is %llu bytes, file size %llu)",
                             CEscape(t.name).c_str(), static_cast<ull>(t.offset),
                             static_cast<ull>(t.nbytes), static_cast<ull>(avail),
                             static_cast<ull>(size())));
    }
    t.data = bytes_.data() + data + t.offset;
  }
  std::vector<size_t> order(ts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return ts[x].offset != ts[y].offset ? ts[x].offset < ts[y].offset : x < y;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = ts[order[k - 1]];
    const TensorInfo& cur = ts[order[k]];
    if (prev.offset + prev.nbytes > cur.offset) {
      return Error(offset_field_pos_[order[k]],
                   StrFormat("tensor '%s' [%llu, %llu) overlaps tensor '%s' "
                             "[%llu, %llu)",
                             CEscape(cur.name).c_str(), static_cast<ull>(cur.offset),
                             static_cast<ull>(cur.offset + cur.nbytes),
                             CEscape(prev.name).c_str(), static_cast<ull>(prev.offset),
                             static_cast<ull>(prev.offset + prev.nbytes)));
    }
  }
  return OkStatus();
}

Status Parser::Run() {
  uint64_t tensor_count = 0, kv_count = 0;
  RETURN_IF_ERROR(ParseHeader(&tensor_count, &kv_count));
  RETURN_IF_ERROR(ParseMetadata(kv_count));
  RETURN_IF_ERROR(ParseAlignment());
  // Re-check the tensor count against what is left after the metadata.
  if (tensor_count > remaining() / kMinTensorInfoBytes) {
    return Error(pos_, StrFormat("tensor count %llu past end of file (size %llu)",
                                 static_cast<ull>(tensor_count),
                                 static_cast<ull>(size())));
  }
  return ParseTensorInfos(tensor_count);
}

}  // namespace weft::gguf
