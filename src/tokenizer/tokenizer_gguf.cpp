// Tokenizer::from_gguf: llama.cpp's tokenizer metadata (tokenizer.ggml.*).
//
// "gpt2" is byte-level BPE with ranked merges and a pre-tokenizer chosen by
// tokenizer.ggml.pre; "llama" is SentencePiece BPE whose merge order comes
// from the token scores. One deliberate difference from llama.cpp: "qwen2"
// applies NFC first, as Hugging Face (the reference for Qwen) does.
#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

Status bad(const std::string& what) {
  return invalid_argument("gguf tokenizer: " + what);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
  auto tok = std::unique_ptr<Tokenizer>(new Tokenizer());
  const auto model = gguf.get_string("tokenizer.ggml.model");
  if (!model) return bad("tokenizer.ggml.model is missing");
  if (*model == "gpt2") {
    tok->kind_ = TokenizerKind::kByteLevelBpe;
  } else if (*model == "llama") {
    tok->kind_ = TokenizerKind::kSentencePieceBpe;
  } else {
    return unimplemented("gguf tokenizer: tokenizer.ggml.model \"" + std::string(*model) +
                         "\" is not supported (gpt2, llama are)");
  }

  const GgufValue* tokens = gguf.get_array("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->elem_type != GgufValueType::kString || tokens->count == 0) {
    return bad("tokenizer.ggml.tokens is missing or not a non-empty string array");
  }
  if (tokens->count > 16'000'000) return bad("tokenizer.ggml.tokens has too many entries");
  const size_t n = tokens->strings.size();
  if (n != tokens->count) return bad("tokenizer.ggml.tokens count disagrees with its strings");
  tok->tokens_.reserve(n);
  for (std::string_view t : tokens->strings) tok->tokens_.emplace_back(t);

  tok->types_.assign(n, TokenType::kNormal);
  if (const GgufValue* types = gguf.get_array("tokenizer.ggml.token_type")) {
    if (types->count != n || types->elem_type == GgufValueType::kString ||
        types->elem_type == GgufValueType::kArray) {
      return bad("tokenizer.ggml.token_type must be an integer array as long as tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = types->int_at(i);
      if (t < 0 || t > 6)
        return bad("token_type " + std::to_string(t) + " of token " + std::to_string(i) +
                   " is not in 0..6");
      tok->types_[i] = static_cast<TokenType>(t);
    }
  }
  tok->scores_.assign(n, 0.0f);
  if (const GgufValue* scores = gguf.get_array("tokenizer.ggml.scores")) {
    if (scores->count != n || scores->elem_type != GgufValueType::kFloat32) {
      return bad("tokenizer.ggml.scores must be a float32 array as long as tokens");
    }
    for (size_t i = 0; i < n; ++i) tok->scores_[i] = static_cast<float>(scores->float_at(i));
  }

  auto read_id = [&](const char* key, int32_t* out) -> Status {
    const GgufValue* v = gguf.find(key);
    if (v == nullptr) return Status::ok();
    const auto id = gguf.get_int(key);
    if (!id || *id < -1 || *id >= static_cast<int64_t>(n)) {
      return bad(std::string(key) + " is not a token id below " + std::to_string(n));
    }
    *out = static_cast<int32_t>(*id);
    return Status::ok();
  };
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.bos_token_id", &tok->bos_id_));
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eos_token_id", &tok->eos_id_));
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.unknown_token_id", &tok->unk_id_));
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.padding_token_id", &tok->pad_id_));
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eot_token_id", &tok->eot_id_));
  STRATA_RETURN_IF_ERROR(read_id("tokenizer.ggml.eom_token_id", &tok->eom_id_));
  const std::string pre(gguf.get_string("tokenizer.ggml.pre").value_or("default"));
  const bool is_spm = tok->kind_ == TokenizerKind::kSentencePieceBpe;
  tok->add_bos_ =
      gguf.get_bool("tokenizer.ggml.add_bos_token").value_or(is_spm || pre == "llama-bpe");
  tok->add_eos_ = gguf.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (auto tmpl = gguf.get_string("tokenizer.chat_template")) tok->chat_template_ = *tmpl;

  if (is_spm) {
    tok->pre_name_ = "default";
    tok->add_space_prefix_ = gguf.get_bool("tokenizer.ggml.add_space_prefix").value_or(true);
    tok->replace_spaces_ = true;
    tok->byte_fallback_ = true;
    tok->strip_leading_space_ = tok->add_space_prefix_;
    if (tok->unk_id_ >= 0) tok->types_[tok->unk_id_] = TokenType::kUnknown;
    STRATA_RETURN_IF_ERROR(tok->finalize());
    // SentencePiece BPE: a pair merges if its concatenation is a piece; the
    // higher the piece's score, the earlier. Equal scores share a rank so the
    // leftmost pair wins, as in SentencePiece. User-defined pieces take part
    // like normal ones (llama.cpp scores them alike; Gemma 3's "▁▁" runs are
    // user-defined pieces that merges build).
    auto mergeable = [&](size_t i) {
      return tok->types_[i] == TokenType::kNormal || tok->types_[i] == TokenType::kUserDefined;
    };
    std::vector<float> distinct;
    for (size_t i = 0; i < n; ++i) {
      if (mergeable(i)) distinct.push_back(tok->scores_[i]);
    }
    std::sort(distinct.begin(), distinct.end(), std::greater<float>());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    auto normal_id = [&](std::string_view piece) -> int32_t {
      auto it = tok->token_to_id_.find(std::string(piece));
      return it != tok->token_to_id_.end() && mergeable(static_cast<size_t>(it->second))
                 ? it->second
                 : -1;
    };
    for (size_t i = 0; i < n; ++i) {
      const std::string& piece = tok->tokens_[i];
      if (!mergeable(i) || normal_id(piece) != static_cast<int32_t>(i)) {
        continue;
      }
      const auto rank =
          static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), tok->scores_[i],
                                                std::greater<float>()) -
                               distinct.begin());
      for (size_t cut = unicode::utf8_char_bytes(static_cast<uint8_t>(piece[0]));
           cut < piece.size(); cut += unicode::utf8_char_bytes(static_cast<uint8_t>(piece[cut]))) {
        const int32_t l = normal_id(std::string_view(piece).substr(0, cut));
        const int32_t r = normal_id(std::string_view(piece).substr(cut));
        if (l >= 0 && r >= 0) tok->merges_.add(l, r, rank, static_cast<int32_t>(i));
      }
    }
    return tok;
  }

  // Byte-level BPE.
  if (pre == "default" || pre == "gpt-2" || pre == "gpt2") {
    STRATA_ASSIGN_OR_RETURN(RegexSplitter s, RegexSplitter::compile(kGpt2Regex));
    tok->splitters_.push_back(std::move(s));
  } else if (pre == "llama-bpe" || pre == "llama3") {
    STRATA_ASSIGN_OR_RETURN(RegexSplitter s, RegexSplitter::compile(kLlama3Regex));
    tok->splitters_.push_back(std::move(s));
    tok->ignore_merges_ = true;  // as Llama 3's tokenizer.json and llama.cpp do
  } else if (pre == "qwen2") {
    STRATA_ASSIGN_OR_RETURN(RegexSplitter s, RegexSplitter::compile(kQwen2Regex));
    tok->splitters_.push_back(std::move(s));
    tok->is_nfc_ = true;
  } else {
    return unimplemented("gguf tokenizer: tokenizer.ggml.pre \"" + pre +
                         "\" is not supported (default, gpt-2, llama-bpe, qwen2 are)");
  }
  tok->pre_name_ = pre;
  STRATA_RETURN_IF_ERROR(tok->finalize());

  const GgufValue* merges = gguf.get_array("tokenizer.ggml.merges");
  if (merges == nullptr || merges->elem_type != GgufValueType::kString) {
    return bad("tokenizer.ggml.merges is missing (required for gpt2)");
  }
  for (size_t rank = 0; rank < merges->strings.size(); ++rank) {
    const std::string_view m = merges->strings[rank];
    const size_t space = m.find(' ', 1);  // a merge's left side is never empty
    if (space == std::string_view::npos) {
      return bad("merge " + std::to_string(rank) + " has no space separator");
    }
    const auto l = tok->token_id(m.substr(0, space));
    const auto r = tok->token_id(m.substr(space + 1));
    const auto res =
        tok->token_id(std::string(m.substr(0, space)) + std::string(m.substr(space + 1)));
    if (!l || !r || !res) {
      return bad("merge " + std::to_string(rank) + " (\"" + std::string(m) +
                 "\") uses a piece missing from the vocabulary");
    }
    tok->merges_.add(*l, *r, static_cast<int32_t>(rank), *res);
    tok->merge_pairs_.emplace_back(*l, *r);
  }
  return tok;
}

}  // namespace strata
