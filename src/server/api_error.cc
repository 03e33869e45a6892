#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace weft::server {

std::string ApiError::ToJson() const {
  nlohmann::json e = {{"message", message}, {"type", type}};
  e["param"] = param ? nlohmann::json(*param) : nlohmann::json(nullptr);
  e["code"] = code ? nlohmann::json(*code) : nlohmann::json(nullptr);
  nlohmann::json j = {{"error", e}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ApiError::ToAnthropicJson() const {
  const char* t = "invalid_request_error";
  switch (http_status) {
    case 401: t = "authentication_error"; break;
    case 403: t = "permission_error"; break;
    case 404: t = "not_found_error"; break;
    case 413: t = "request_too_large"; break;
    case 429: t = "rate_limit_error"; break;
    case 503: t = "overloaded_error"; break;
    case 504: t = "timeout_error"; break;
    default: if (http_status >= 500) t = "api_error";
  }
  nlohmann::json j = {{"type", "error"}, {"error", {{"type", t}, {"message", message}}}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
ApiError Make(int status, std::string message, std::string type,
              std::optional<std::string> param = {},
              std::optional<std::string> code = {}) {
  ApiError e;
  e.http_status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}
}  // namespace

ApiError BadRequest(std::string message, std::optional<std::string> param,
                    std::optional<std::string> code) {
  return Make(400, std::move(message), "invalid_request_error",
              std::move(param), std::move(code));
}
ApiError NotFound(std::string message) {
  return Make(404, std::move(message), "not_found_error", {}, "not_found");
}
ApiError MethodNotAllowed(std::string message) {
  return Make(405, std::move(message), "invalid_request_error", {},
              "method_not_allowed");
}
ApiError Unauthorized() {
  return Make(401, "Invalid or missing API key.", "authentication_error", {},
              "invalid_api_key");
}
ApiError PayloadTooLarge(std::string message) {
  return Make(413, std::move(message), "invalid_request_error", {},
              "request_too_large");
}
ApiError TooManyRequests(std::string message) {
  return Make(429, std::move(message), "rate_limit_error", {},
              "queue_full");
}
ApiError Unavailable(std::string message) {
  return Make(503, std::move(message), "service_unavailable_error", {},
              "unavailable");
}
ApiError InternalServerError(std::string message) {
  return Make(500, std::move(message), "server_error", {}, "internal_error");
}

ApiError FromStatus(const Status& s, std::optional<std::string> param) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      return BadRequest(s.message(), std::move(param));
    case StatusCode::kResourceExhausted:
      return TooManyRequests(s.message());
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
      return Unavailable(s.message());
    case StatusCode::kNotFound:
      return NotFound(s.message());
    default:
      return InternalServerError(s.message());
  }
}

ApiError GatewayTimeout(std::string message) {
  return Make(504, std::move(message), "timeout_error");
}

}  // namespace weft::server
