// Status and StatusOr<T>: cheap error values for expected failures (bad file,
// bad request, no memory). Broken invariants use CHECK (check.h) instead.
//
// Thread safety: values; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "util/check.h"

namespace weft {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed
  kNotFound,            // a file, key or tensor does not exist
  kOutOfRange,          // a value or offset past its bounds
  kDataLoss,            // a file is truncated or corrupt
  kUnimplemented,       // valid, but Weft does not support it (yet)
  kResourceExhausted,   // no memory, no KV blocks, queue full
  kFailedPrecondition,  // the system is not in a state to do this
  kUnavailable,         // try again later (loading, draining)
  kAborted,             // cancelled by the caller
  kInternal,            // a bug; prefer CHECK where it cannot be handled
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status DataLossError(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status AbortedError(std::string m) {
  return Status(StatusCode::kAborted, std::move(m));
}
inline Status InternalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& s) : v_(s) {  // NOLINT: implicit by design
    CHECK(!s.ok()) << "StatusOr constructed from an OK status";
  }
  StatusOr(Status&& s) : v_(std::move(s)) {  // NOLINT
    CHECK(!std::get<Status>(v_).ok()) << "StatusOr constructed from OK";
  }
  StatusOr(const T& v) : v_(v) {}       // NOLINT
  StatusOr(T&& v) : v_(std::move(v)) {}  // NOLINT
  template <typename U>
    requires(std::is_constructible_v<T, U &&> &&
             !std::is_same_v<std::decay_t<U>, Status> &&
             !std::is_same_v<std::decay_t<U>, T> &&
             !std::is_same_v<std::decay_t<U>, StatusOr<T>>)
  StatusOr(U&& u) : v_(T(std::forward<U>(u))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // REQUIRES: ok().
  const T& value() const& {
    CHECK(ok()) << status().ToString();
    return std::get<T>(v_);
  }
  T& value() & {
    CHECK(ok()) << status().ToString();
    return std::get<T>(v_);
  }
  T&& value() && {
    CHECK(ok()) << status().ToString();
    return std::get<T>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace weft

#define WEFT_CONCAT_INNER_(a, b) a##b
#define WEFT_CONCAT_(a, b) WEFT_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::weft::Status weft_status_ = (expr);      \
    if (!weft_status_.ok()) return weft_status_; \
  } while (0)

// ASSIGN_OR_RETURN(auto x, Foo()); declares x or returns Foo()'s error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(WEFT_CONCAT_(weft_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
