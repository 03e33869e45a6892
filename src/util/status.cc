#include "util/status.h"

#include "util/enum_name.h"

namespace weft {

std::string_view StatusCodeName(StatusCode code) {
  static constexpr std::string_view kNames[] = {"OK",
                                                "INVALID_ARGUMENT",
                                                "NOT_FOUND",
                                                "OUT_OF_RANGE",
                                                "DATA_LOSS",
                                                "UNIMPLEMENTED",
                                                "RESOURCE_EXHAUSTED",
                                                "FAILED_PRECONDITION",
                                                "UNAVAILABLE",
                                                "ABORTED",
                                                "INTERNAL"};
  return EnumName<StatusCode::kInternal>(code, kNames, "UNKNOWN");
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace weft
