// Tokenizer: text <-> token ids for byte-level BPE (GPT-2, Llama 3, Qwen2/3)
// and SentencePiece BPE with byte fallback (Llama 2, Mistral), loaded from
// GGUF tokenizer metadata or a Hugging Face tokenizer.json.
//
// Encoding: added/special tokens written in the text are matched first
// (leftmost-longest); each stretch of text between them is normalized (NFC,
// the SentencePiece "▁" prefix/replacement), pre-tokenized (PCRE2 regex
// splits), and merged by BPE. Ids match Hugging Face `tokenizers`.
//
// Decoding: token_to_piece() is the exact bytes a token stands for; decode()
// concatenates pieces, drops the SentencePiece leading space once (HF's Strip
// decoder) and replaces each maximal invalid UTF-8 subpart by one U+FFFD.
// IncrementalDetokenizer gives the same text in streaming form. (HF's
// ByteFallback decoder instead turns a whole run of byte tokens that is not
// valid UTF-8 into one U+FFFD per byte; strata keeps one rule so streaming
// need not hold back whole byte runs. Valid text decodes identically.)
//
// Immutable after loading; every const method is thread-safe. Ids outside
// [0, vocab_size()) never cause undefined behaviour: encode never emits them,
// token_to_piece() returns "" for them, check_ids()/try_decode() reject them.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/bpe_merges.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/unicode_text.h"
#include "util/status.h"

namespace strata {

// Token types as GGUF's tokenizer.ggml.token_type numbers them.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // special: <s>, <|im_end|>; matched in text only with parse_special
  kUserDefined = 4,  // added non-special token: always matched in text, never skipped
  kUnused = 5,
  kByte = 6,  // SentencePiece byte fallback <0xNN>
};

enum class TokenizerKind {
  kByteLevelBpe,      // GGUF "gpt2"
  kSentencePieceBpe,  // GGUF "llama"
};

// SentencePiece's word-boundary mark, U+2581 "▁", that stands for a space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

// The byte a SentencePiece byte token "<0xNN>" stands for, or -1.
int parse_byte_token(std::string_view text);

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);
  // Reads tokenizer.json (BOS/EOS insertion from its post_processor); a
  // tokenizer_config.json next to it, when present, names bos/eos/pad and
  // supplies the chat template. Unsupported features fail by name.
  static Result<std::unique_ptr<Tokenizer>> from_hf_json(const std::string& path);

  // add_special: BOS/EOS as the model's settings say. parse_special: control
  // tokens written in `text` become their ids (user-defined added tokens are
  // always matched). Invalid UTF-8 in `text` is first replaced by U+FFFD.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Text of `ids`; skip_special drops control/unknown tokens. Ids out of range
  // are skipped (use try_decode() or check_ids() to reject them).
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;
  Result<std::string> try_decode(std::span<const int32_t> ids, bool skip_special) const;
  Status check_ids(std::span<const int32_t> ids) const;

  // The bytes token `id` emits ("▁" as space, <0xNN> as the byte, byte-level
  // characters as their bytes); "" when id is out of range.
  std::string token_to_piece(int32_t id) const;

  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t unk_id() const { return unk_id_; }
  int32_t pad_id() const { return pad_id_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  TokenizerKind kind() const { return kind_; }
  // End of generation: eos, eot, eom, <|im_end|>, <|endoftext|>, ...
  bool is_eog(int32_t id) const;
  bool is_special(int32_t id) const;  // control or unknown
  TokenType token_type(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view piece) const;
  // The token's text as stored in the vocabulary ("Ġhello", "▁the", "<s>").
  const std::string& token_text(int32_t id) const;
  const std::string& chat_template() const { return chat_template_; }
  bool has_chat_template() const { return !chat_template_.empty(); }

  // Streaming decode helpers (IncrementalDetokenizer): the bytes token `id`
  // adds to decode() output (empty when skipped), and whether decode() drops
  // one leading space of the whole output.
  std::string_view decode_piece(int32_t id, bool skip_special, std::string* scratch) const;
  bool strips_leading_space() const { return strip_leading_space_; }

  // For export to GGUF metadata.
  // llama.cpp's tokenizer.ggml.pre name ("qwen2", "gpt-2", "llama-bpe",
  // "default"); "" when the pre-tokenizer has none.
  const std::string& pre_name() const { return pre_name_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  float token_score(int32_t id) const;
  // Merges in rank order as (left id, right id); empty when the merges come
  // from scores (GGUF "llama").
  const std::vector<std::pair<int32_t, int32_t>>& merge_pairs() const { return merge_pairs_; }

 private:
  Tokenizer() = default;

  struct AddedToken {
    std::string text;
    int32_t id;
    bool is_special;
  };
  // Text between matched added tokens.
  void encode_segment(std::string_view text, std::vector<int32_t>* out) const;
  void encode_word(std::string_view word, std::vector<int32_t>* out) const;
  // Builds token_to_id_, merges from scores, added-token matcher, eog set.
  Status finalize();

  TokenizerKind kind_ = TokenizerKind::kByteLevelBpe;
  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int32_t> token_to_id_;
  BpeMerges merges_;
  std::vector<std::pair<int32_t, int32_t>> merge_pairs_;
  std::vector<AddedToken> added_;  // sorted by text length, longest first
  std::array<std::vector<uint32_t>, 256> added_by_first_byte_;  // indices into added_
  std::vector<bool> is_eog_;

  // Normalization and pre-tokenization.
  bool is_nfc_ = false;
  bool add_space_prefix_ = false;         // SentencePiece: prepend "▁" to each segment
  bool replace_spaces_ = false;           // SentencePiece: " " -> "▁"
  bool byte_level_prefix_space_ = false;  // ByteLevel add_prefix_space
  std::vector<RegexSplitter> splitters_;  // applied in order
  std::string pre_name_;                  // GGUF tokenizer.ggml.pre

  // Model.
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;  // a word that is itself a token skips BPE (Llama 3)
  unicode::ByteLevelAlphabet alphabet_;
  int32_t byte_ids_[256] = {};  // byte-level: id of each byte's character; SPM: <0xNN>

  // Decoding.
  bool strip_leading_space_ = false;

  int32_t bos_id_ = -1, eos_id_ = -1, unk_id_ = -1, pad_id_ = -1, eot_id_ = -1, eom_id_ = -1;
  bool add_bos_ = false, add_eos_ = false;
  std::string chat_template_;
};

}  // namespace strata
