// POST /strata/v1/probe: how much of a prompt this replica holds, and how
// loaded it is, for strata router's cache-aware routing (docs/router.md).
//
// The router tokenizes a request as the replica would (prompt_builder.h),
// computes the chained block hashes of its full blocks (kv/block_hash.h;
// a cache_salt is already folded into block 0's key, so the salt itself is
// never sent) and asks. Wire format, version 1:
//
//   request  {"block_size": 16, "block_hashes": ["<64 hex digits>", ...]}
//   answer   200 {"block_size": 16,              the engine's block size
//                 "num_pool_tokens": 480,        leading tokens in the pool
//                 "tiers": [{"name": "ram", "num_tokens": 512,
//                            "is_available": true, "tokens_per_s": 0}, ...],
//                 "num_running": 1, "num_waiting": 0, "num_loading": 0,
//                 "num_pending_prefill_tokens": 0,
//                 "num_free_kv_blocks": 900, "num_kv_blocks": 1024,
//                 "prefill_tokens_per_s": 812.5, "decode_tokens_per_s": 31.0}
//   error    400 with an OpenAI error body (not JSON, a bad hash, too many)
//
// A request whose block_size differs from the engine's keys other blocks:
// nothing is looked up (every hit count is 0) and the answer's block_size
// tells the router which size to hash with next time. Hashes are counted
// from the prompt's start; the engine stops at the first miss.
//
// Pure functions of their arguments (and the engine's thread-safe probe);
// thread-safe. handle_probe never waits for the engine thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engine/prefix_probe.h"
#include "http/http_request.h"
#include "kv/block_hash.h"
#include "server/api_error.h"
#include "util/status.h"

namespace strata::server {

inline constexpr std::string_view kProbePath = "/strata/v1/probe";
// More hashes than this (a million tokens at block size 16) are refused.
inline constexpr size_t kMaxProbeBlockHashes = 65536;

struct ProbeRequest {
  int32_t block_size = 0;
  std::vector<BlockHash> block_hashes;
};

// The router's side: the request body, and the answer parsed back.
std::string probe_request_body(int32_t block_size, std::span<const BlockHash> block_hashes);
Result<PrefixProbe> parse_probe_answer(std::string_view body);

// The replica's side.
std::optional<ApiError> parse_probe_request(std::string_view body, ProbeRequest* out);
nlohmann::json probe_answer_json(const PrefixProbe& probe);
// The whole route: parse, Engine::probe_prefix, answer (200 JSON or 400).
http::HttpReply handle_probe(const Engine& engine, std::string_view body);

}  // namespace strata::server
