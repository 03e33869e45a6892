#include "engine/request.h"

#include "util/enum_name.h"

namespace weft::engine {

std::string_view RequestStatusName(RequestStatus s) {
  static constexpr std::string_view kNames[] = {"waiting", "running",
                                                "preempted", "finished"};
  return EnumName<RequestStatus::kFinished>(s, kNames, "?");
}

std::string_view FinishReasonName(FinishReason r) {
  static constexpr std::string_view kNames[] = {"none", "stop", "length",
                                                "abort", "error"};
  return EnumName<FinishReason::kError>(r, kNames, "?");
}

}  // namespace weft::engine
