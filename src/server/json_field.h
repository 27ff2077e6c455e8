// A request body's optional field: absent and JSON null read the same, as
// the OpenAI API treats them.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace strata::server {

// The field `key` of the object `obj`, or nullptr when it is missing or null.
inline const nlohmann::json* find_field(const nlohmann::json& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace strata::server
