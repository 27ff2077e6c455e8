#include "engine/resume_state.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace strata {
namespace {

using json = nlohmann::json;

// Bounds that keep a hostile record cheap to refuse (no request is longer).
constexpr size_t kMaxTokens = size_t{1} << 22;
constexpr size_t kMaxStringBytes = 256;

Status bad(const std::string& field, const std::string& why) {
  return invalid_argument("strata_resume: " + field + " " + why);
}

Result<std::vector<int32_t>> token_ids(const json& j, const char* field) {
  if (!j.is_array()) return bad(field, "must be an array of token ids");
  if (j.size() > kMaxTokens) return bad(field, "is too long");
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (const json& v : j) {
    if (!v.is_number_integer()) return bad(field, "must hold integers only");
    const int64_t id = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT32_MAX}
                           ? int64_t{-1}
                           : v.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return bad(field, "holds a token id outside [0, 2^31)");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

// A uint64 as a decimal string (JSON numbers lose precision past 2^53 in
// many clients).
Result<uint64_t> u64_string(const json& j, const char* field) {
  if (!j.is_string()) return bad(field, "must be a decimal string");
  const std::string& s = j.get_ref<const std::string&>();
  if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos) {
    return bad(field, "must be a decimal string");
  }
  uint64_t v = 0;
  for (char c : s) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return bad(field, "is out of range");
    v = v * 10 + d;
  }
  return v;
}

Result<std::string> short_string(const json& j, const char* field) {
  if (!j.is_string()) return bad(field, "must be a string");
  const std::string& s = j.get_ref<const std::string&>();
  if (s.size() > kMaxStringBytes) return bad(field, "is too long");
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return bad(field, "holds a control character");
  }
  return s;
}

}  // namespace

Status ResumeState::validate() const {
  if (prompt_tokens.empty()) return bad("prompt_token_ids", "must not be empty");
  if (rng_draws > 2 * static_cast<uint64_t>(output_tokens.size())) {
    return bad("rng_draws", "must be at most 2 per output token");
  }
  if (!kv_peer.empty()) {
    const size_t colon = kv_peer.rfind(':');
    const std::string port = colon == std::string::npos ? "" : kv_peer.substr(colon + 1);
    if (colon == 0 || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) == 0 ||
        std::stoi(port) > 65535) {
      return bad("kv_peer", "must be HOST:PORT");
    }
  }
  if (created < 0) return bad("created", "must be >= 0");
  return Status::ok();
}

json resume_state_to_json(const ResumeState& s) {
  return json{{"v", 1},
              {"prompt_token_ids", s.prompt_tokens},
              {"output_token_ids", s.output_tokens},
              {"seed", std::to_string(s.seed)},
              {"rng_draws", std::to_string(s.rng_draws)},
              {"kv_peer", s.kv_peer},
              {"response_id", s.response_id},
              {"created", s.created}};
}

Result<ResumeState> resume_state_from_json(const json& j) {
  if (!j.is_object()) return invalid_argument("strata_resume: must be an object");
  static const std::set<std::string> kFields = {"v",       "prompt_token_ids", "output_token_ids",
                                                "seed",    "rng_draws",        "kv_peer",
                                                "created", "response_id"};
  for (const auto& [key, value] : j.items()) {
    if (!kFields.count(key)) return bad(key, "is not a field of the record");
  }
  for (const std::string& key : kFields) {
    if (!j.contains(key)) return bad(key, "is missing");
  }
  if (!j["v"].is_number_integer() || j["v"].get<int64_t>() != 1) {
    return bad("v", "must be 1 (this server's record version)");
  }
  ResumeState s;
  STRATA_ASSIGN_OR_RETURN(s.prompt_tokens, token_ids(j["prompt_token_ids"], "prompt_token_ids"));
  STRATA_ASSIGN_OR_RETURN(s.output_tokens, token_ids(j["output_token_ids"], "output_token_ids"));
  STRATA_ASSIGN_OR_RETURN(s.seed, u64_string(j["seed"], "seed"));
  STRATA_ASSIGN_OR_RETURN(s.rng_draws, u64_string(j["rng_draws"], "rng_draws"));
  STRATA_ASSIGN_OR_RETURN(s.kv_peer, short_string(j["kv_peer"], "kv_peer"));
  STRATA_ASSIGN_OR_RETURN(s.response_id, short_string(j["response_id"], "response_id"));
  if (!j["created"].is_number_integer()) return bad("created", "must be an integer");
  if (j["created"].is_number_unsigned() &&
      j["created"].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return bad("created", "is out of range");
  }
  s.created = j["created"].get<int64_t>();
  STRATA_RETURN_IF_ERROR(s.validate());
  return s;
}

}  // namespace strata
