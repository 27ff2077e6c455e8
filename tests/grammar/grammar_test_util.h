// Helpers shared by the grammar tests: compile from text, a brute-force mask
// (every vocabulary token tried against the matcher), random walks.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"
#include "util/xoshiro.h"

namespace strata::grammar_test {

inline std::shared_ptr<const TokenMaskCache> make_cache(const Grammar& g,
                                                        std::shared_ptr<const TokenTrie> trie) {
  auto compiled = CompiledGrammar::compile(g);
  EXPECT_TRUE(compiled.is_ok()) << compiled.status().message();
  if (!compiled.is_ok()) return nullptr;
  return std::make_shared<TokenMaskCache>(*compiled, std::move(trie));
}

// A vocabulary: every printable ASCII byte alone, a few multi-byte words
// that cross grammar boundaries, UTF-8 characters, one EOS (last id).
inline std::shared_ptr<const TokenTrie> small_vocab(std::vector<std::string> extra = {}) {
  std::vector<std::string> v;
  for (int c = 0x20; c < 0x7F; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  v.push_back("\n");
  v.push_back("\t");
  for (const char* s : {"\":",
                        "\",",
                        "{\"",
                        "\"}",
                        "},",
                        "[{",
                        "}]",
                        ", \"",
                        "true",
                        "false",
                        "null",
                        "12",
                        "0.",
                        "e+",
                        "ab",
                        "abc",
                        "\\n",
                        "\\\"",
                        "\\u00",
                        " \"",
                        "é",
                        "日本",
                        "\xF0\x9F\x98\x80",
                        "  ",
                        "\n  ",
                        ":\"",
                        "\"]"})
    v.push_back(s);
  for (auto& s : extra) v.push_back(std::move(s));
  v.push_back("<eos>");
  const int32_t eos = static_cast<int32_t>(v.size() - 1);
  return std::make_shared<const TokenTrie>(std::move(v), std::vector<int32_t>{eos},
                                           std::vector<int32_t>{eos});
}

inline std::vector<uint64_t> brute_force_mask(GrammarMatcher* m) {
  const TokenTrie& trie = m->cache().trie();
  std::vector<uint64_t> mask(trie.mask_words(), 0);
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    if (m->accept_token(id)) {
      mask[id >> 6] |= uint64_t{1} << (id & 63);
      EXPECT_TRUE(m->rollback(1));
    }
  }
  return mask;
}

inline std::vector<int32_t> mask_ids(const std::vector<uint64_t>& mask) {
  std::vector<int32_t> out;
  for (size_t w = 0; w < mask.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if ((mask[w] >> b) & 1) out.push_back(static_cast<int32_t>(w * 64 + b));
  return out;
}

// Uniform random walk over allowed tokens until EOS or max_tokens; checks
// the fast mask against brute force at every step when `check_masks`.
// Returns the text, or nullopt-like "" with *finished=false if cut.
inline std::string random_walk(const std::shared_ptr<const TokenMaskCache>& cache, uint64_t seed,
                               int32_t max_tokens, bool check_masks, bool* finished,
                               int32_t* steps_checked = nullptr) {
  GrammarMatcher m(cache);
  Xoshiro256 rng(seed);
  const TokenTrie& trie = cache->trie();
  std::vector<uint64_t> mask(trie.mask_words());
  std::string text;
  *finished = false;
  for (int32_t step = 0; step < max_tokens; ++step) {
    m.fill_next_token_bitmask(mask);
    if (check_masks) {
      const auto brute = brute_force_mask(&m);
      EXPECT_EQ(mask_ids(mask), mask_ids(brute)) << "after text: " << text;
      if (steps_checked) ++*steps_checked;
    }
    const auto ids = mask_ids(mask);
    if (ids.empty()) {
      ADD_FAILURE() << "no allowed token after: " << text;
      return text;
    }
    const int32_t id = ids[rng.next_u64() % ids.size()];
    EXPECT_TRUE(m.accept_token(id));
    if (trie.is_matchable(id)) text += trie.token_bytes(id);
    if (m.is_terminated()) {
      *finished = true;
      return text;
    }
  }
  return text;
}

}  // namespace strata::grammar_test
