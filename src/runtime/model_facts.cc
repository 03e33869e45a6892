#include "runtime/model_facts.h"

#include <cctype>
#include <map>

#include "util/status.h"

namespace weft::runtime {

std::string FileTypeName(uint32_t file_type) {
  switch (file_type) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K_S";
    case 12: return "Q3_K_M";
    case 13: return "Q3_K_L";
    case 14: return "Q4_K_S";
    case 15: return "Q4_K_M";
    case 16: return "Q5_K_S";
    case 17: return "Q5_K_M";
    case 18: return "Q6_K";
    case 25: return "IQ4_NL";
    case 30: return "IQ4_XS";
    case 32: return "BF16";
    case 38: return "MXFP4_MOE";  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE (gpt-oss)
    default: return "";
  }
}

std::optional<uint32_t> FileTypeOf(GgmlType type) {
  std::string name(TypeName(type));  // "q4_K"
  for (char& ch : name) ch = static_cast<char>(std::toupper(ch));
  constexpr uint32_t kLastFileType = 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  for (uint32_t code = 0; code <= kLastFileType; ++code) {
    const std::string file_type = FileTypeName(code);
    if (file_type == name || file_type == name + "_S" || file_type == name + "_MOE") {
      return code;
    }
  }
  return std::nullopt;
}

std::string Quantization(const gguf::GgufFile& file) {
  if (file.Has("general.file_type")) {
    StatusOr<uint32_t> ft = file.GetUint32("general.file_type");
    if (ft.ok()) {
      std::string name = FileTypeName(*ft);
      if (!name.empty()) return name;
    }
  }
  std::map<std::string, uint64_t> bytes;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.dims.size() >= 2) bytes[std::string(TypeName(t.type))] += t.nbytes;
  }
  std::string best;
  uint64_t most = 0;
  for (const auto& [name, b] : bytes) {
    if (b > most) {
      most = b;
      best = name;
    }
  }
  return best;
}

}  // namespace weft::runtime
