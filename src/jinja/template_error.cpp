#include "jinja/template_error.h"

namespace strata::jinja {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSyntax:
      return "template syntax error";
    case ErrorKind::kRuntime:
      return "template error";
    case ErrorKind::kRaised:
      return "template raised";
    case ErrorKind::kLimit:
      return "template limit exceeded";
  }
  return "template error";
}

std::string TemplateError::to_string() const {
  if (kind_ == ErrorKind::kRaised) return message_;
  std::string out = error_kind_name(kind_);
  if (line_ > 0) {
    out += " at line " + std::to_string(line_);
    if (column_ > 0) out += ", column " + std::to_string(column_);
  }
  return out + ": " + message_;
}

Status TemplateError::to_status() const {
  return Status(
      kind_ == ErrorKind::kLimit ? StatusCode::kResourceExhausted : StatusCode::kInvalidArgument,
      to_string());
}

void throw_runtime(std::string message) {
  throw TemplateException(TemplateError(ErrorKind::kRuntime, std::move(message)));
}

void throw_limit(std::string message) {
  throw TemplateException(TemplateError(ErrorKind::kLimit, std::move(message)));
}

}  // namespace strata::jinja
