// Tokenizer metadata export.
#include "tokenizer/tokenizer_export.h"

#include <cassert>
#include <limits>
#include <unordered_set>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata {

Status export_hf_tokenizer_to_gguf(const std::string& tokenizer_json, GgufWriter& writer) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::from_hf_json(tokenizer_json));
  if (tok->pre_name().empty()) {
    return unimplemented("tokenizer export: " + tokenizer_json +
                         ": the pre-tokenizer has no llama.cpp tokenizer.ggml.pre name");
  }
  const int32_t n = tok->vocab_size();
  const bool is_spm = tok->kind() == TokenizerKind::kSentencePieceBpe;
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n);
  for (int32_t i = 0; i < n; ++i) {
    tokens[i] = tok->token_text(i);
    TokenType t = tok->token_type(i);
    if (tokens[i].empty() || t == TokenType::kUndefined) {
      tokens[i] = "[PAD" + std::to_string(i) + "]";  // ids no file names: unused
      t = TokenType::kUnused;
    }
    types[i] = static_cast<int32_t>(t);
  }
  writer.add_string("tokenizer.ggml.model", is_spm ? "llama" : "gpt2");
  writer.add_string("tokenizer.ggml.pre", tok->pre_name());
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  if (is_spm) {
    // Scores that make SentencePiece's "highest-scoring piece first" equal
    // to the merge ranks; pieces no merge makes sort below all of them.
    std::vector<float> scores(n, 0.0f);
    std::vector<bool> has_rank(n, false);
    const auto& pairs = tok->merge_pairs();
    for (size_t rank = 0; rank < pairs.size(); ++rank) {
      const auto result =
          tok->token_id(tok->token_text(pairs[rank].first) + tok->token_text(pairs[rank].second));
      if (result && !has_rank[*result]) {
        has_rank[*result] = true;
        scores[*result] = -static_cast<float>(rank + 1);
      }
    }
    for (int32_t i = 0; i < n; ++i) {
      if (!has_rank[i] && tok->token_type(i) == TokenType::kNormal) {
        scores[i] = -static_cast<float>(pairs.size() + 1 + i);
      }
    }
    writer.add_f32_array("tokenizer.ggml.scores", scores);
  }
  writer.add_i32_array("tokenizer.ggml.token_type", types);
  if (!is_spm) {
    std::vector<std::string> merges;
    merges.reserve(tok->merge_pairs().size());
    for (const auto& [l, r] : tok->merge_pairs()) {
      merges.push_back(tok->token_text(l) + " " + tok->token_text(r));
    }
    writer.add_string_array("tokenizer.ggml.merges", merges);
  }
  if (tok->bos_id() >= 0) writer.add_u32("tokenizer.ggml.bos_token_id", tok->bos_id());
  if (tok->eos_id() >= 0) writer.add_u32("tokenizer.ggml.eos_token_id", tok->eos_id());
  if (tok->unk_id() >= 0) writer.add_u32("tokenizer.ggml.unknown_token_id", tok->unk_id());
  if (tok->pad_id() >= 0) writer.add_u32("tokenizer.ggml.padding_token_id", tok->pad_id());
  writer.add_bool("tokenizer.ggml.add_bos_token", tok->add_bos());
  writer.add_bool("tokenizer.ggml.add_eos_token", tok->add_eos());
  if (is_spm) writer.add_bool("tokenizer.ggml.add_space_prefix", tok->add_space_prefix());
  if (tok->has_chat_template()) writer.add_string("tokenizer.chat_template", tok->chat_template());
  return Status::ok();
}

namespace {

// SplitMix64: the same sequence on every platform and standard library.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
};

}  // namespace

void write_synthetic_spm_vocab(GgufWriter& writer, int32_t vocab_size, uint64_t seed) {
  assert(vocab_size >= 300);
  const std::string kSpace = "\xE2\x96\x81";
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  static const char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">");
    types.push_back(6);
  }
  std::unordered_set<std::string> seen(tokens.begin(), tokens.end());
  const auto size = static_cast<size_t>(vocab_size);
  auto add = [&](const std::string& piece) {
    if (tokens.size() < size && seen.insert(piece).second) {
      tokens.push_back(piece);
      types.push_back(1);
    }
  };
  // Single characters: frequent English letters first so that small
  // vocabularies still cover most text without byte fallback.
  const std::string kChars =
      "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ0123456789.,!?'\"-:;()";
  add(kSpace);
  for (const char* piece : {"t", "h", "e", "\xE2\x96\x81t", "\xE2\x96\x81th", "\xE2\x96\x81the"}) {
    add(piece);  // so that even the smallest vocabulary merges something
  }
  for (char c : kChars) add(std::string(1, c));
  // Pieces: common words with their "▁" prefixes, each piece added only after
  // its prefix so every piece splits into two earlier ones; then seeded
  // pseudo-words.
  static const char* kWords[] = {
      "the",   "of",     "and",   "to",    "in",     "is",    "that",  "it",     "was",  "for",
      "on",    "are",    "as",    "with",  "his",    "they",  "at",    "be",     "this", "from",
      "have",  "or",     "by",    "one",   "had",    "not",   "but",   "what",   "all",  "were",
      "when",  "we",     "there", "can",   "an",     "your",  "which", "their",  "said", "if",
      "do",    "will",   "each",  "about", "how",    "up",    "out",   "them",   "then", "she",
      "many",  "some",   "so",    "these", "would",  "other", "into",  "has",    "more", "her",
      "two",   "like",   "him",   "see",   "time",   "could", "no",    "make",   "than", "first",
      "been",  "its",    "who",   "now",   "people", "my",    "made",  "over",   "did",  "down",
      "only",  "way",    "find",  "use",   "may",    "water", "long",  "little", "very", "after",
      "words", "called", "just",  "where", "most",   "know",  "Once",  "upon",   "a",    "there",
      "lived", "king",   "Hello", "world", "The",    "story", "model", "token"};
  auto add_with_prefixes = [&](const std::string& word) {
    std::string piece = kSpace;
    for (char c : word) {
      piece += c;
      add(piece);
    }
    // The word without "▁" too (inside longer words).
    std::string inner;
    for (char c : word) {
      inner += c;
      if (inner.size() > 1) add(inner);
    }
  };
  for (const char* w : kWords) add_with_prefixes(w);
  SplitMix64 rng{seed};
  static const char kLetters[] = "etaoinshrdlcumwfgypbvk";
  size_t attempts = 0;
  while (tokens.size() < size) {
    std::string word;
    const uint32_t len = 2 + rng.below(7);
    for (uint32_t i = 0; i < len; ++i) word += kLetters[rng.below(sizeof(kLetters) - 1)];
    add_with_prefixes(word);
    if (++attempts > 50u * size) {  // cannot happen for sane sizes: pad with numbered pieces
      add(kSpace + "x" + std::to_string(tokens.size()));
    }
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 259; i < tokens.size(); ++i) scores[i] = -static_cast<float>(i - 259);
  writer.add_string("tokenizer.ggml.model", "llama");
  writer.add_string("tokenizer.ggml.pre", "default");
  writer.add_string_array("tokenizer.ggml.tokens", tokens);
  writer.add_f32_array("tokenizer.ggml.scores", scores);
  writer.add_i32_array("tokenizer.ggml.token_type", types);
  writer.add_u32("tokenizer.ggml.bos_token_id", 1);
  writer.add_u32("tokenizer.ggml.eos_token_id", 2);
  writer.add_u32("tokenizer.ggml.unknown_token_id", 0);
  writer.add_bool("tokenizer.ggml.add_bos_token", true);
  writer.add_bool("tokenizer.ggml.add_eos_token", false);
  writer.add_bool("tokenizer.ggml.add_space_prefix", true);
}

}  // namespace strata
