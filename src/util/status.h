// Status and Result<T>: error values for every boundary that can fail for
// reasons outside the program (files, network, HTTP input, model files).
//
// A Status is either OK or carries a code and a one-line message that names
// the defect ("gguf: tensor 'blk.0.attn_q.weight': offset + size exceeds file
// size"). Result<T> is a T or a non-OK Status. Both are cheap to move and
// [[nodiscard]]: ignoring an error is a compile warning.
//
// Invariants inside the program use assert(); anything a user or a file
// controls goes through Status.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace strata {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input: a request, a flag, a malformed file
  kNotFound,
  kOutOfRange,
  kResourceExhausted,
  kUnimplemented,
  kIoError,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status not_found(std::string msg) {
  return Status(StatusCode::kNotFound, std::move(msg));
}
inline Status out_of_range(std::string msg) {
  return Status(StatusCode::kOutOfRange, std::move(msg));
}
inline Status unimplemented(std::string msg) {
  return Status(StatusCode::kUnimplemented, std::move(msg));
}
inline Status io_error(std::string msg) {
  return Status(StatusCode::kIoError, std::move(msg));
}
inline Status internal_error(std::string msg) {
  return Status(StatusCode::kInternal, std::move(msg));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).is_ok() && "Result constructed from an OK status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace strata

// Propagates a non-OK Status from an expression that yields a Status.
#define STRATA_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::strata::Status strata_status_ = (expr);           \
    if (!strata_status_.is_ok()) return strata_status_; \
  } while (0)

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)
// Declares `lhs` from a Result-yielding expression, or returns its Status.
#define STRATA_ASSIGN_OR_RETURN(lhs, expr)                    \
  auto STRATA_CONCAT_(strata_result_, __LINE__) = (expr);     \
  if (!STRATA_CONCAT_(strata_result_, __LINE__).is_ok())      \
    return STRATA_CONCAT_(strata_result_, __LINE__).status(); \
  lhs = std::move(STRATA_CONCAT_(strata_result_, __LINE__)).value()
