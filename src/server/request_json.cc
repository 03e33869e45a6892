#include "server/request_json.h"

#include <algorithm>

#include "util/strings.h"

namespace weft::server {

using json = nlohmann::json;

int MaxJsonDepth(std::string_view body) {
  JsonBracketScanner scan;
  int max_depth = 0;
  for (char c : body) {
    if (scan.Feed(c) > 0) max_depth = std::max(max_depth, scan.depth);
  }
  return max_depth;
}

std::optional<json> ParseBody(std::string_view body, std::optional<ApiError>* err) {
  if (MaxJsonDepth(body) > kMaxJsonDepth) {
    *err = BadRequest(StrFormat("request body nests deeper than %d levels",
                                kMaxJsonDepth));
    return std::nullopt;
  }
  json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) {
    *err = BadRequest("request body is not valid JSON");
    return std::nullopt;
  }
  if (!j.is_object()) {
    *err = BadRequest("request body must be a JSON object");
    return std::nullopt;
  }
  return j;
}

}  // namespace weft::server
