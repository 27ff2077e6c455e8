#include "util/status.h"

namespace strata {

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return message_;
}

}  // namespace strata
