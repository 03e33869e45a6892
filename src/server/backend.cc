#include "server/backend.h"

#include <algorithm>

#include "util/enum_name.h"

namespace weft::server {

std::string_view FinishReasonName(FinishReason r) {
  static constexpr std::string_view kNames[] = {"stop", "length", "abort",
                                                "error"};
  return EnumName<FinishReason::kError>(r, kNames, "error");
}

StatusOr<std::vector<int32_t>> LeadingSpecialTokens(Backend& b) {
  ASSIGN_OR_RETURN(std::vector<int32_t> with, b.Tokenize("a", true, true));
  ASSIGN_OR_RETURN(std::vector<int32_t> without, b.Tokenize("a", false, true));
  size_t lead = 0;
  while (lead + without.size() <= with.size() &&
         !std::equal(without.begin(), without.end(), with.begin() + lead)) {
    ++lead;
  }
  if (lead + without.size() > with.size()) lead = 0;
  with.resize(lead);
  return with;
}

StatusOr<std::vector<int32_t>> TokenizeChatPrompt(Backend& b,
                                                  std::string_view text) {
  ASSIGN_OR_RETURN(std::vector<int32_t> ids, b.Tokenize(text, false, true));
  ASSIGN_OR_RETURN(std::vector<int32_t> lead, LeadingSpecialTokens(b));
  if (ids.size() < lead.size() ||
      !std::equal(lead.begin(), lead.end(), ids.begin())) {
    ids.insert(ids.begin(), lead.begin(), lead.end());
  }
  return ids;
}

}  // namespace weft::server
