// TemplateError: why a Jinja template failed to parse or render, and
// Expected<T>, a T or a TemplateError.
//
// The kind tells callers what to answer: a syntax error is the template's
// fault; a runtime error is a template operation that failed on this input
// (an undefined attribute used, a type error); kRaised is the template itself
// calling raise_exception(message) (Hugging Face templates use it to reject
// input, e.g. Gemma's "Conversation roles must alternate"), whose message is
// kept verbatim for the client; kLimit is a render stopped by a RenderLimits
// bound (a hostile template). Plain values; thread-safe to copy.
#pragma once

#include <exception>
#include <string>
#include <utility>
#include <variant>

#include "util/status.h"

namespace strata::jinja {

enum class ErrorKind { kSyntax, kRuntime, kRaised, kLimit };

const char* error_kind_name(ErrorKind kind);

class TemplateError {
 public:
  TemplateError(ErrorKind kind, std::string message, int line = 0, int column = 0)
      : kind_(kind), message_(std::move(message)), line_(line), column_(column) {}

  ErrorKind kind() const { return kind_; }
  // The bare message (for kRaised: exactly the template's argument).
  const std::string& message() const { return message_; }
  // 1-based position in the template source; 0 when unknown.
  int line() const { return line_; }
  int column() const { return column_; }
  void set_position(int line, int column) {
    line_ = line;
    column_ = column;
  }

  // "template syntax error at line 3, column 7: unexpected '}'"; kRaised
  // gives the message alone.
  std::string to_string() const;
  // kLimit -> kResourceExhausted, everything else -> kInvalidArgument, with
  // to_string() as the message.
  Status to_status() const;

 private:
  ErrorKind kind_;
  std::string message_;
  int line_;
  int column_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design
  Expected(TemplateError error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const TemplateError& error() const { return std::get<TemplateError>(v_); }
  Status status() const { return is_ok() ? Status::ok() : error().to_status(); }

 private:
  std::variant<T, TemplateError> v_;
};

// Internal: thrown inside the engine and caught at its public boundary
// (Template::parse / Template::render), so no exception leaves the library.
class TemplateException : public std::exception {
 public:
  explicit TemplateException(TemplateError error) : error_(std::move(error)) {}
  const char* what() const noexcept override { return error_.message().c_str(); }
  TemplateError& error() { return error_; }

 private:
  TemplateError error_;
};

[[noreturn]] void throw_runtime(std::string message);
[[noreturn]] void throw_limit(std::string message);

}  // namespace strata::jinja
