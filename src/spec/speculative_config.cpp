#include "spec/speculative_config.h"

#include <nlohmann/json.hpp>

namespace strata {
namespace {

Status bad(const std::string& why) {
  return invalid_argument("--speculative-config: " + why);
}

// A number field, or an error naming it.
Status read_double(const nlohmann::json& value, const std::string& key, double* out) {
  if (!value.is_number()) return bad("\"" + key + "\" must be a number");
  *out = value.get<double>();
  return Status::ok();
}

// An integer field, or an error naming it.
Status read_int(const nlohmann::json& value, const std::string& key, int32_t* out) {
  if (!value.is_number_integer()) return bad("\"" + key + "\" must be an integer");
  const int64_t v = value.get<int64_t>();
  if (v < -(int64_t{1} << 30) || v > (int64_t{1} << 30)) return bad("\"" + key + "\" is too large");
  *out = static_cast<int32_t>(v);
  return Status::ok();
}

}  // namespace

const char* speculative_method_name(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::kNone:
      return "none";
    case SpeculativeMethod::kNgram:
      return "ngram";
    case SpeculativeMethod::kSuffix:
      return "suffix";
  }
  return "none";
}

Status SpeculativeConfig::validate() const {
  if (!enabled()) return Status::ok();
  if (num_speculative_tokens < 1 || num_speculative_tokens > kMaxDrafts) {
    return bad("\"num_speculative_tokens\" must be in [1, " + std::to_string(kMaxDrafts) +
               "], got " + std::to_string(num_speculative_tokens));
  }
  if (prompt_lookup_min < 1) return bad("\"prompt_lookup_min\" must be >= 1");
  if (prompt_lookup_max < prompt_lookup_min) {
    return bad("\"prompt_lookup_max\" must be >= \"prompt_lookup_min\"");
  }
  if (prompt_lookup_max > 64) return bad("\"prompt_lookup_max\" must be <= 64");
  if (suffix_max_tree_depth < 2 || suffix_max_tree_depth > 256) {
    return bad("\"suffix_decoding_max_tree_depth\" must be in [2, 256]");
  }
  if (suffix_max_cached_requests < 0 || suffix_max_cached_requests > 1'000'000) {
    return bad("\"suffix_decoding_max_cached_requests\" must be in [0, 1000000]");
  }
  if (!(suffix_max_spec_factor > 0.0 && suffix_max_spec_factor <= 64.0)) {
    return bad("\"suffix_decoding_max_spec_factor\" must be in (0, 64]");
  }
  if (!(suffix_min_token_prob >= 0.0 && suffix_min_token_prob <= 1.0)) {
    return bad("\"suffix_decoding_min_token_prob\" must be in [0, 1]");
  }
  return Status::ok();
}

std::string SpeculativeConfig::to_json() const {
  if (!enabled()) return "";
  nlohmann::json j;
  j["method"] = speculative_method_name(method);
  j["num_speculative_tokens"] = num_speculative_tokens;
  if (method == SpeculativeMethod::kNgram) {
    j["prompt_lookup_min"] = prompt_lookup_min;
    j["prompt_lookup_max"] = prompt_lookup_max;
  } else {
    j["suffix_decoding_max_tree_depth"] = suffix_max_tree_depth;
    j["suffix_decoding_max_cached_requests"] = suffix_max_cached_requests;
    j["suffix_decoding_max_spec_factor"] = suffix_max_spec_factor;
    j["suffix_decoding_min_token_prob"] = suffix_min_token_prob;
  }
  j["gating"] = cost_gating ? "cost" : "off";
  return j.dump();
}

Result<SpeculativeConfig> SpeculativeConfig::parse(const std::string& json_text) {
  SpeculativeConfig c;
  if (json_text.empty()) return c;
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON: " + json_text);
  if (!j.is_object()) return bad("must be a JSON object");
  bool has_min = false, has_max = false, has_k = false, has_suffix = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "method") {
      if (!value.is_string()) return bad("\"method\" must be a string");
      const std::string m = value.get<std::string>();
      if (m == "ngram") {
        c.method = SpeculativeMethod::kNgram;
      } else if (m == "suffix") {
        c.method = SpeculativeMethod::kSuffix;
      } else {
        return bad("unknown method \"" + m + "\" (strata has \"ngram\" and \"suffix\")");
      }
    } else if (key == "num_speculative_tokens") {
      STRATA_RETURN_IF_ERROR(read_int(value, key, &c.num_speculative_tokens));
      has_k = true;
    } else if (key == "prompt_lookup_min") {
      STRATA_RETURN_IF_ERROR(read_int(value, key, &c.prompt_lookup_min));
      has_min = true;
    } else if (key == "prompt_lookup_max") {
      STRATA_RETURN_IF_ERROR(read_int(value, key, &c.prompt_lookup_max));
      has_max = true;
    } else if (key == "suffix_decoding_max_tree_depth") {
      STRATA_RETURN_IF_ERROR(read_int(value, key, &c.suffix_max_tree_depth));
      has_suffix = true;
    } else if (key == "suffix_decoding_max_cached_requests") {
      STRATA_RETURN_IF_ERROR(read_int(value, key, &c.suffix_max_cached_requests));
      has_suffix = true;
    } else if (key == "suffix_decoding_max_spec_factor") {
      STRATA_RETURN_IF_ERROR(read_double(value, key, &c.suffix_max_spec_factor));
      has_suffix = true;
    } else if (key == "suffix_decoding_min_token_prob") {
      STRATA_RETURN_IF_ERROR(read_double(value, key, &c.suffix_min_token_prob));
      has_suffix = true;
    } else if (key == "gating") {
      if (!value.is_string() || (value != "cost" && value != "off")) {
        return bad("\"gating\" must be \"cost\" or \"off\"");
      }
      c.cost_gating = value == "cost";
    } else {
      return bad("unknown field \"" + key +
                 "\" (known: method, num_speculative_tokens, prompt_lookup_min, "
                 "prompt_lookup_max, suffix_decoding_max_tree_depth, "
                 "suffix_decoding_max_cached_requests, suffix_decoding_max_spec_factor, "
                 "suffix_decoding_min_token_prob, gating)");
    }
  }
  if (c.method == SpeculativeMethod::kNone) return bad("\"method\" is required");
  if (!has_k) return bad("\"num_speculative_tokens\" is required");
  if (has_min && !has_max) c.prompt_lookup_max = c.prompt_lookup_min;
  if (has_max && !has_min) c.prompt_lookup_min = c.prompt_lookup_max;
  if ((has_min || has_max) && c.method != SpeculativeMethod::kNgram) {
    return bad("prompt_lookup_min/max apply to method \"ngram\" only");
  }
  if (has_suffix && c.method != SpeculativeMethod::kSuffix) {
    return bad("suffix_decoding_* fields apply to method \"suffix\" only");
  }
  STRATA_RETURN_IF_ERROR(c.validate());
  return c;
}

}  // namespace strata
