// OpenAI-style API errors: an HTTP status plus
// {"error": {"message", "type", "param", "code"}}.
//
// Thread safety: values.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "util/status.h"

namespace weft::server {

struct ApiError {
  int http_status = 400;          // 400, 401, 404, 405, 413, 429, 500, 503
  std::string message;            // human-readable, one line
  std::string type = "invalid_request_error";  // OpenAI error type
  std::optional<std::string> param;  // offending request field, if any
  std::optional<std::string> code;   // machine-readable code, if any

  // {"error": {...}} as JSON text.
  std::string ToJson() const;
  // Anthropic's shape: {"type": "error", "error": {"type", "message"}},
  // the type chosen by the HTTP status (invalid_request_error,
  // authentication_error, not_found_error, request_too_large,
  // rate_limit_error, api_error, overloaded_error, timeout_error).
  std::string ToAnthropicJson() const;
};

ApiError BadRequest(std::string message, std::optional<std::string> param = {},
                    std::optional<std::string> code = {});
ApiError NotFound(std::string message);
ApiError MethodNotAllowed(std::string message);
ApiError Unauthorized();
ApiError PayloadTooLarge(std::string message);
ApiError TooManyRequests(std::string message);
ApiError Unavailable(std::string message);
ApiError InternalServerError(std::string message);
ApiError GatewayTimeout(std::string message);  // 504, "timeout_error"
// Maps a backend Status: InvalidArgument/OutOfRange -> 400,
// ResourceExhausted -> 429, Unavailable/FailedPrecondition -> 503,
// NotFound -> 404, others -> 500.
ApiError FromStatus(const Status& s, std::optional<std::string> param = {});

// Either a value or an ApiError (the server's StatusOr).
template <typename T>
class ApiResult {
 public:
  ApiResult(ApiError e) : v_(std::move(e)) {}  // NOLINT
  ApiResult(T v) : v_(std::move(v)) {}         // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const ApiError& error() const { return std::get<ApiError>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }

 private:
  std::variant<ApiError, T> v_;
};

}  // namespace weft::server
