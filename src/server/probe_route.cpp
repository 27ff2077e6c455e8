#include "server/probe_route.h"

#include <utility>

#include "server/openai_response.h"
#include "server/protocol.h"

namespace strata::server {
namespace {

using nlohmann::json;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parse_block_hash(std::string_view hex, BlockHash* out) {
  if (hex.size() != 2 * out->bytes.size()) return false;
  for (size_t i = 0; i < out->bytes.size(); ++i) {
    const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

// A non-negative integer field of the answer; absent = 0.
bool get_count(const json& j, const char* key, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) return false;
  *out = it->get<int64_t>();
  return true;
}

bool get_rate(const json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_number() || !(it->get<double>() >= 0.0)) return false;
  *out = it->get<double>();
  return true;
}

// Both bodies nest two levels; a deeper one is refused before parsing, so a
// hostile nesting costs nothing.
constexpr int32_t kMaxProbeJsonDepth = 4;

json parse_shallow(std::string_view body) {
  if (json_nesting_depth(body, kMaxProbeJsonDepth + 1) > kMaxProbeJsonDepth) return json();
  return json::parse(body, nullptr, /*allow_exceptions=*/false);
}

}  // namespace

std::string probe_request_body(int32_t block_size, std::span<const BlockHash> block_hashes) {
  std::string body = "{\"block_size\":" + std::to_string(block_size) + ",\"block_hashes\":[";
  body.reserve(body.size() + block_hashes.size() * 67 + 2);
  for (size_t i = 0; i < block_hashes.size(); ++i) {
    if (i > 0) body += ',';
    body += '"';
    body += block_hashes[i].to_hex();
    body += '"';
  }
  body += "]}";
  return body;
}

std::optional<ApiError> parse_probe_request(std::string_view body, ProbeRequest* out) {
  json j = parse_shallow(body);
  if (!j.is_object()) return invalid_param("", "The probe body must be a JSON object.");
  auto bs = j.find("block_size");
  if (bs == j.end() || !bs->is_number_integer() || bs->get<int64_t>() < 1 ||
      bs->get<int64_t>() > (1 << 20)) {
    return invalid_param("block_size", "block_size must be a positive integer.");
  }
  out->block_size = static_cast<int32_t>(bs->get<int64_t>());
  auto hs = j.find("block_hashes");
  if (hs == j.end() || !hs->is_array()) {
    return invalid_param("block_hashes", "block_hashes must be an array of hex strings.");
  }
  if (hs->size() > kMaxProbeBlockHashes) {
    return invalid_param("block_hashes", "Too many block_hashes (at most " +
                                             std::to_string(kMaxProbeBlockHashes) + ").");
  }
  out->block_hashes.assign(hs->size(), BlockHash{});
  for (size_t i = 0; i < hs->size(); ++i) {
    const json& h = (*hs)[i];
    if (!h.is_string() ||
        !parse_block_hash(h.get_ref<const std::string&>(), &out->block_hashes[i])) {
      return invalid_param("block_hashes", "Each block hash must be 64 hex digits.");
    }
  }
  return std::nullopt;
}

json probe_answer_json(const PrefixProbe& p) {
  json tiers = json::array();
  for (const KvSourceProbe& t : p.tiers) {
    tiers.push_back(json{{"name", t.name},
                         {"num_tokens", t.num_tokens},
                         {"is_available", t.is_available},
                         {"tokens_per_s", t.tokens_per_s}});
  }
  return json{{"block_size", p.block_size},
              {"num_pool_tokens", p.num_pool_tokens},
              {"tiers", std::move(tiers)},
              {"num_running", p.num_running},
              {"num_waiting", p.num_waiting},
              {"num_loading", p.num_loading},
              {"num_pending_prefill_tokens", p.num_pending_prefill_tokens},
              {"num_free_kv_blocks", p.num_free_kv_blocks},
              {"num_kv_blocks", p.num_kv_blocks},
              {"prefill_tokens_per_s", p.prefill_tokens_per_s},
              {"decode_tokens_per_s", p.decode_tokens_per_s}};
}

Result<PrefixProbe> parse_probe_answer(std::string_view body) {
  const json j = parse_shallow(body);
  auto bad = [](const char* what) {
    return invalid_argument(std::string("router: malformed probe answer (") + what + ")");
  };
  if (!j.is_object()) return bad("not a JSON object");
  PrefixProbe p;
  int64_t block_size = 0;
  if (!get_count(j, "block_size", &block_size) || block_size < 1 || block_size > (1 << 20)) {
    return bad("block_size");
  }
  p.block_size = static_cast<int32_t>(block_size);
  if (!get_count(j, "num_pool_tokens", &p.num_pool_tokens) ||
      !get_count(j, "num_running", &p.num_running) ||
      !get_count(j, "num_waiting", &p.num_waiting) ||
      !get_count(j, "num_loading", &p.num_loading) ||
      !get_count(j, "num_pending_prefill_tokens", &p.num_pending_prefill_tokens) ||
      !get_count(j, "num_free_kv_blocks", &p.num_free_kv_blocks) ||
      !get_count(j, "num_kv_blocks", &p.num_kv_blocks) ||
      !get_rate(j, "prefill_tokens_per_s", &p.prefill_tokens_per_s) ||
      !get_rate(j, "decode_tokens_per_s", &p.decode_tokens_per_s)) {
    return bad("a count or rate");
  }
  if (auto it = j.find("tiers"); it != j.end()) {
    if (!it->is_array()) return bad("tiers");
    for (const json& t : *it) {
      if (!t.is_object()) return bad("tiers");
      KvSourceProbe s;
      auto name = t.find("name");
      if (name == t.end() || !name->is_string()) return bad("tier name");
      s.name = name->get<std::string>();
      if (!get_count(t, "num_tokens", &s.num_tokens) ||
          !get_rate(t, "tokens_per_s", &s.tokens_per_s)) {
        return bad("tier counts");
      }
      if (auto a = t.find("is_available"); a != t.end()) {
        if (!a->is_boolean()) return bad("tier is_available");
        s.is_available = a->get<bool>();
      }
      p.tiers.push_back(std::move(s));
    }
  }
  return p;
}

http::HttpReply handle_probe(const Engine& engine, std::string_view body) {
  http::HttpReply reply;
  reply.content_type = "application/json";
  ProbeRequest request;
  if (auto e = parse_probe_request(body, &request)) {
    reply.status = e->http_status;
    reply.body = e->body();
    return reply;
  }
  // Keys of another block size name other blocks: look nothing up.
  const bool is_same_layout = request.block_size == engine.options().block_size;
  const PrefixProbe probe =
      engine.probe_prefix(is_same_layout ? std::span<const BlockHash>(request.block_hashes)
                                         : std::span<const BlockHash>());
  reply.body = dump_json(probe_answer_json(probe));
  return reply;
}

}  // namespace strata::server
