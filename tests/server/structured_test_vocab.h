// A small synthetic vocabulary for the server's grammar tests: every
// printable ASCII byte and '\n' as its own token, some multi-byte pieces the
// JSON and tool-call grammars use, and one end-of-generation token; plus a
// sampler that walks a grammar with its masks (uniform over allowed tokens,
// like temperature-1 sampling over a flat distribution).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/token_trie.h"

namespace strata::server::testing {

inline std::shared_ptr<const TokenTrie> make_test_trie() {
  std::vector<std::string> tokens;
  tokens.push_back("");  // id 0: end of generation (no bytes)
  tokens.push_back("\n");
  for (int c = 32; c < 127; ++c) tokens.push_back(std::string(1, static_cast<char>(c)));
  for (const char* piece :
       {"{\"", "\": ", "\", \"", "name", "arguments", "parameters", "<tool_call>", "</tool_call>",
        "[TOOL_CALLS]", "true", "false", "null", "  ", "\"}", "}\n", "ab", "get_", "weather"}) {
    tokens.push_back(piece);
  }
  return std::make_shared<const TokenTrie>(std::move(tokens), std::vector<int32_t>{},
                                           std::vector<int32_t>{0});
}

// Samples one output; `finished` says whether the grammar ended (EOS or no
// continuation) within max_tokens.
inline std::string sample_output(const std::shared_ptr<const TokenMaskCache>& cache,
                                 std::mt19937& rng, int32_t max_tokens, bool* finished) {
  GrammarMatcher m(cache);
  const TokenTrie& trie = cache->trie();
  std::vector<uint64_t> mask(trie.mask_words());
  std::string out;
  *finished = false;
  for (int32_t step = 0; step < max_tokens; ++step) {
    if (m.is_terminated()) {
      *finished = true;
      return out;
    }
    m.fill_next_token_bitmask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < trie.vocab_size(); ++id) {
      if ((mask[id / 64] >> (id % 64)) & 1) allowed.push_back(id);
    }
    if (allowed.empty()) return out;
    // Ending is taken with probability 1/2 when allowed, so outputs stay short.
    const bool can_end = m.can_terminate();
    if (can_end && std::uniform_int_distribution<int>(0, 1)(rng) == 0) {
      *finished = true;
      return out;
    }
    std::vector<int32_t> body;
    for (int32_t id : allowed) {
      if (id != 0) body.push_back(id);
    }
    if (body.empty()) {
      *finished = true;
      return out;
    }
    const int32_t id = body[std::uniform_int_distribution<size_t>(0, body.size() - 1)(rng)];
    if (!m.accept_token(id)) return out;
    out += trie.token_bytes(id);
  }
  *finished = m.is_terminated() || m.can_terminate();
  return out;
}

}  // namespace strata::server::testing
