// Helpers for the Jinja engine's unit tests: render a template source with
// variables given as JSON, the way Hugging Face configures Jinja2.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "jinja/template.h"

namespace strata::jinja::testing {

// Renders `source` with the variables of the JSON object `vars`; on an error
// returns "ERROR(kind): message".
inline std::string render(const std::string& source,
                          const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                          const RenderOptions& options = {}) {
  auto t = Template::parse(source);
  if (!t.is_ok())
    return "ERROR(" + std::string(error_kind_name(t.error().kind())) + "): " + t.error().message();
  std::vector<std::pair<std::string, Value>> v;
  for (const auto& [k, value] : vars.items()) v.emplace_back(k, value_from_json(value));
  auto r = t->render(v, options);
  if (!r.is_ok())
    return "ERROR(" + std::string(error_kind_name(r.error().kind())) + "): " + r.error().message();
  return r.value();
}

inline ErrorKind error_kind(const std::string& source,
                            const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                            const RenderOptions& options = {}) {
  auto t = Template::parse(source);
  if (!t.is_ok()) return t.error().kind();
  std::vector<std::pair<std::string, Value>> v;
  for (const auto& [k, value] : vars.items()) v.emplace_back(k, value_from_json(value));
  auto r = t->render(v, options);
  EXPECT_FALSE(r.is_ok()) << "rendered: " << r.value();
  return r.is_ok() ? ErrorKind::kRuntime : r.error().kind();
}

}  // namespace strata::jinja::testing
