// libFuzzer target: grammar text from untrusted bytes (response_format
// schemas, guided_regex, guided_grammar and guided_choice come from users).
// The first byte picks the front end (JSON Schema, regex, GBNF, choice); the
// rest is its text (at most 4 KiB). Whatever builds is compiled under a
// small state budget, bound to a tiny vocabulary, and walked for a few
// tokens (masks, jump-forward, rollback), so a crash, sanitizer report, hang
// or unbounded allocation anywhere from parsing to matching shows. An error
// Status is a fine outcome.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_spec.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"

namespace {

std::shared_ptr<const strata::TokenTrie> vocab() {
  static const auto trie = [] {
    std::vector<std::string> v;
    for (int c = 0; c < 256; ++c) v.push_back(std::string(1, static_cast<char>(c)));
    for (const char* s : {"{\"", "\":", "\",", "\"}", "true", "null", "12", "ab", " \"", "\n ", "é",
                          "\xE6\x97\xA5", "\\u", "[{", "}]", "<eos>"})
      v.push_back(s);
    const int32_t eos = static_cast<int32_t>(v.size() - 1);
    return std::make_shared<const strata::TokenTrie>(std::move(v), std::vector<int32_t>{eos},
                                                     std::vector<int32_t>{eos});
  }();
  return trie;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4097) return 0;
  static const strata::GrammarKind kKinds[] = {
      strata::GrammarKind::kJsonSchema, strata::GrammarKind::kRegex, strata::GrammarKind::kGbnf,
      strata::GrammarKind::kChoice};
  strata::GrammarSpec spec;
  spec.kind = kKinds[data[0] % 4];
  spec.text.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  auto grammar = strata::build_grammar(spec);
  if (!grammar.is_ok()) return 0;
  strata::CompileOptions options;
  options.max_nodes = 20000;
  auto compiled = strata::CompiledGrammar::compile(*grammar, options);
  if (!compiled.is_ok()) return 0;
  auto cache = std::make_shared<const strata::TokenMaskCache>(*compiled, vocab());
  strata::GrammarMatcher m(cache);
  std::vector<uint64_t> mask(cache->trie().mask_words());
  uint64_t pick = 0x9E3779B97F4A7C15ull ^ size;
  for (int step = 0; step < 8 && !m.is_terminated(); ++step) {
    m.fill_next_token_bitmask(mask);
    (void)m.find_jump_forward_bytes(64);
    std::vector<int32_t> ids;
    for (size_t w = 0; w < mask.size(); ++w)
      for (uint64_t b = mask[w]; b; b &= b - 1)
        ids.push_back(static_cast<int32_t>(w * 64 + __builtin_ctzll(b)));
    if (ids.empty()) __builtin_trap();  // pruning must leave a way forward
    pick = pick * 6364136223846793005ull + 1442695040888963407ull;
    if (!m.accept_token(ids[(pick >> 33) % ids.size()])) __builtin_trap();
  }
  if (m.num_history() > 0 && !m.rollback(1)) __builtin_trap();
  return 0;
}
