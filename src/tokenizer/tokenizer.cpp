// Tokenizer: the encode/decode paths shared by both loaders (tokenizer_gguf.cpp,
// tokenizer_hf.cpp).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>

namespace strata {
namespace {

void replace_all(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s->size() + s->size() / 2);
  size_t pos = 0;
  while (true) {
    const size_t hit = s->find(from, pos);
    if (hit == std::string::npos) break;
    out.append(*s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(*s, pos, std::string::npos);
  *s = std::move(out);
}

// Texts that end generation in the chat formats we serve.
constexpr std::array<std::string_view, 9> kEogTexts = {
    "<|im_end|>",    "<|endoftext|>",   "<|eot_id|>", "<|eom_id|>", "<|end|>",
    "<end_of_turn>", "<|end_of_text|>", "<|return|>", "</s>"};

}  // namespace

int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

Status Tokenizer::finalize() {
  const int32_t n = vocab_size();
  if (n <= 0) return invalid_argument("tokenizer: empty vocabulary");
  if (types_.size() != tokens_.size()) types_.assign(tokens_.size(), TokenType::kNormal);
  token_to_id_.clear();
  token_to_id_.reserve(tokens_.size());
  for (int32_t id = 0; id < n; ++id) {
    if (!tokens_[id].empty()) token_to_id_.emplace(tokens_[id], id);  // first id wins
  }
  for (int32_t* id : {&bos_id_, &eos_id_, &unk_id_, &pad_id_, &eot_id_, &eom_id_}) {
    if (*id >= n || *id < -1) {
      return invalid_argument("tokenizer: special token id " + std::to_string(*id) +
                              " is outside the vocabulary of " + std::to_string(n));
    }
  }
  if (kind_ == TokenizerKind::kByteLevelBpe) {
    for (int b = 0; b < 256; ++b) {
      auto it = token_to_id_.find(alphabet_.encode(static_cast<uint8_t>(b)));
      if (it == token_to_id_.end()) {
        return invalid_argument("tokenizer: byte-level vocabulary lacks the character for byte " +
                                std::to_string(b));
      }
      byte_ids_[b] = it->second;
    }
  } else {
    static const char kHex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
      const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
      auto it = token_to_id_.find(name);
      byte_ids_[b] = it != token_to_id_.end() ? it->second : unk_id_;
    }
  }
  added_.clear();
  is_eog_.assign(tokens_.size(), false);
  for (int32_t id = 0; id < n; ++id) {
    const TokenType t = types_[id];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !tokens_[id].empty()) {
      added_.push_back(AddedToken{tokens_[id], id, t != TokenType::kUserDefined});
    }
    if (t == TokenType::kControl || t == TokenType::kUserDefined) {
      for (std::string_view eog : kEogTexts) is_eog_[id] = is_eog_[id] || tokens_[id] == eog;
    }
  }
  std::stable_sort(added_.begin(), added_.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.text.size() > b.text.size();
  });
  for (auto& bucket : added_by_first_byte_) bucket.clear();
  for (uint32_t i = 0; i < added_.size(); ++i) {
    added_by_first_byte_[static_cast<uint8_t>(added_[i].text[0])].push_back(i);
  }
  for (int32_t id : {eos_id_, eot_id_, eom_id_}) {
    if (id >= 0) is_eog_[id] = true;
  }
  return Status::ok();
}

std::vector<int32_t> Tokenizer::encode(std::string_view raw_text, bool add_special,
                                       bool parse_special) const {
  const std::string text = unicode::to_valid_utf8(raw_text);
  std::vector<int32_t> out;
  if (add_special && add_bos_ && bos_id_ >= 0) out.push_back(bos_id_);
  size_t segment_start = 0;
  size_t pos = 0;
  const std::string_view view(text);
  while (pos < view.size()) {
    const AddedToken* hit = nullptr;
    for (uint32_t index : added_by_first_byte_[static_cast<uint8_t>(view[pos])]) {
      const AddedToken& a = added_[index];  // longest first
      if (a.is_special && !parse_special) continue;
      if (view.compare(pos, a.text.size(), a.text) == 0) {
        hit = &a;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    encode_segment(view.substr(segment_start, pos - segment_start), &out);
    out.push_back(hit->id);
    pos += hit->text.size();
    segment_start = pos;
  }
  encode_segment(view.substr(segment_start), &out);
  if (add_special && add_eos_ && eos_id_ >= 0) out.push_back(eos_id_);
  return out;
}

void Tokenizer::encode_segment(std::string_view segment, std::vector<int32_t>* out) const {
  if (segment.empty()) return;
  std::string text(segment);
  if (is_nfc_) {
    auto normalized = unicode::nfc(text);
    if (normalized.is_ok()) text = std::move(normalized).value();
  }
  if (add_space_prefix_) text.insert(0, kSpmSpace);
  if (replace_spaces_) replace_all(&text, " ", kSpmSpace);
  if (byte_level_prefix_space_ && text[0] != ' ') text.insert(0, " ");

  std::vector<std::string_view> pieces{std::string_view(text)};
  std::vector<std::string_view> next;
  for (const RegexSplitter& splitter : splitters_) {
    next.clear();
    for (std::string_view p : pieces) {
      if (!splitter.split(p, &next).is_ok()) next.push_back(p);  // valid UTF-8: cannot fail
    }
    pieces.swap(next);
  }
  for (std::string_view word : pieces) encode_word(word, out);
}

void Tokenizer::encode_word(std::string_view word, std::vector<int32_t>* out) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  if (kind_ == TokenizerKind::kByteLevelBpe) {
    if (ignore_merges_) {
      std::string mapped;
      for (char c : word) mapped += alphabet_.encode(static_cast<uint8_t>(c));
      auto it = token_to_id_.find(mapped);
      if (it != token_to_id_.end() && types_[it->second] == TokenType::kNormal) {
        out->push_back(it->second);
        return;
      }
    }
    for (char c : word) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  } else {
    bool is_prev_unk = false;
    for (size_t i = 0; i < word.size();) {
      const size_t len =
          std::min(unicode::utf8_char_bytes(static_cast<uint8_t>(word[i])), word.size() - i);
      auto it = token_to_id_.find(std::string(word.substr(i, len)));
      if (it != token_to_id_.end()) {
        symbols.push_back(it->second);
        is_prev_unk = false;
      } else if (byte_fallback_) {
        for (size_t k = 0; k < len; ++k) {
          const int32_t id = byte_ids_[static_cast<uint8_t>(word[i + k])];
          if (id >= 0) symbols.push_back(id);
        }
      } else if (unk_id_ >= 0 && !is_prev_unk) {  // consecutive unknowns fuse
        symbols.push_back(unk_id_);
        is_prev_unk = true;
      }
      i += len;
    }
  }
  merges_.apply(&symbols);
  out->insert(out->end(), symbols.begin(), symbols.end());
}

std::string_view Tokenizer::decode_piece(int32_t id, bool skip_special,
                                         std::string* scratch) const {
  if (id < 0 || id >= vocab_size()) return {};
  const TokenType type = types_[id];
  const std::string& text = tokens_[id];
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      if (skip_special && type != TokenType::kUserDefined) return {};
      // tokenizers runs the decoder over added tokens too: a SentencePiece
      // "▁" in one (Gemma 3's "▁▁" whitespace tokens) reads as a space.
      if (kind_ == TokenizerKind::kSentencePieceBpe && text.find(kSpmSpace) != std::string::npos) {
        scratch->assign(text);
        replace_all(scratch, kSpmSpace, " ");
        return *scratch;
      }
      return text;
    case TokenType::kUnused:  // padding ids ("[PAD151669]") emit nothing
    case TokenType::kUndefined:
      return {};
    case TokenType::kByte:
      if (kind_ == TokenizerKind::kSentencePieceBpe && text.size() == 6) {
        const int b = parse_byte_token(text);
        if (b >= 0) {
          scratch->assign(1, static_cast<char>(b));
          return *scratch;
        }
      }
      break;
    case TokenType::kNormal:
      break;
  }
  scratch->clear();
  if (kind_ == TokenizerKind::kByteLevelBpe) {
    alphabet_.decode_token(text, scratch);
  } else {
    scratch->assign(text);
    replace_all(scratch, kSpmSpace, " ");
  }
  return *scratch;
}

std::string Tokenizer::token_to_piece(int32_t id) const {
  std::string scratch;
  return std::string(decode_piece(id, /*skip_special=*/false, &scratch));
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  std::string scratch;
  for (int32_t id : ids) bytes.append(decode_piece(id, skip_special, &scratch));
  std::string_view view(bytes);
  if (strip_leading_space_ && !view.empty() && view[0] == ' ') view.remove_prefix(1);
  return unicode::to_valid_utf8(view);
}

Status Tokenizer::check_ids(std::span<const int32_t> ids) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      return out_of_range("tokenizer: token id " + std::to_string(ids[i]) + " at position " +
                          std::to_string(i) + " is outside the vocabulary [0, " +
                          std::to_string(vocab_size()) + ")");
    }
  }
  return Status::ok();
}

Result<std::string> Tokenizer::try_decode(std::span<const int32_t> ids, bool skip_special) const {
  STRATA_RETURN_IF_ERROR(check_ids(ids));
  return decode(ids, skip_special);
}

bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && id < vocab_size() && is_eog_[id];
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenType t = token_type(id);
  return t == TokenType::kControl || t == TokenType::kUnknown;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return id >= 0 && id < vocab_size() ? types_[id] : TokenType::kUndefined;
}

float Tokenizer::token_score(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < scores_.size() ? scores_[id] : 0.0f;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view piece) const {
  auto it = token_to_id_.find(std::string(piece));
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < vocab_size() ? tokens_[id] : kEmpty;
}

}  // namespace strata
