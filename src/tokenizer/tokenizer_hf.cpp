// Tokenizer::from_hf_json: Hugging Face tokenizer.json (BPE model) with the
// normalizers, pre-tokenizers, decoders and post-processors that byte-level
// BPE (GPT-2, Qwen2/3, Llama 3) and SentencePiece-style BPE (Llama 2,
// Mistral, Gemma 3) files use, with Split pre-tokenizers of every behavior
// and `invert`. Anything else is rejected by name.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using json = nlohmann::json;

Status unsupported(const std::string& what) {
  return unimplemented("tokenizer.json: unsupported " + what);
}

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : std::string("<no type>");
}

bool is_true(const json& j, const char* key) {
  return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

// Escapes a literal for use inside a PCRE2 pattern.
std::string regex_quote(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("tokenizer.json: cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return io_error("tokenizer.json: read failed: " + path);
  return ss.str();
}

// A special-token field of tokenizer_config.json: "text" or {"content": "text"}.
std::optional<std::string> token_field(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_json(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    return invalid_argument("tokenizer.json: " + path + ": " + e.what());
  }
  text.clear();
  text.shrink_to_fit();
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object()) {
    return invalid_argument("tokenizer.json: no \"model\" object");
  }
  auto tok = std::unique_ptr<Tokenizer>(new Tokenizer());
  try {
    // ---- model ----
    const json& model = root["model"];
    if (type_of(model) != "BPE") return unsupported("model.type " + type_of(model));
    if (model.contains("dropout") && !model["dropout"].is_null()) {
      return unsupported("model.dropout (BPE dropout)");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (model.contains(key) && !model[key].is_null() && model[key] != "") {
        return unsupported(std::string("model.") + key);
      }
    }
    tok->ignore_merges_ = is_true(model, "ignore_merges");
    tok->byte_fallback_ = is_true(model, "byte_fallback");
    if (!model.contains("vocab") || !model["vocab"].is_object()) {
      return invalid_argument("tokenizer.json: model.vocab is not an object");
    }
    int64_t max_id = -1;
    for (auto& [piece, id] : model["vocab"].items()) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > 16'000'000) {
        return invalid_argument("tokenizer.json: bad id for vocab entry \"" + piece + "\"");
      }
      max_id = std::max(max_id, id.get<int64_t>());
    }
    const json added = root.contains("added_tokens") && root["added_tokens"].is_array()
                           ? root["added_tokens"]
                           : json::array();
    for (const json& a : added) {
      if (!a.contains("id") || !a["id"].is_number_integer() || a["id"].get<int64_t>() < 0 ||
          a["id"].get<int64_t>() > 16'000'000 || !a.contains("content") ||
          !a["content"].is_string()) {
        return invalid_argument("tokenizer.json: malformed added_tokens entry");
      }
      max_id = std::max(max_id, a["id"].get<int64_t>());
    }
    const size_t n = static_cast<size_t>(max_id + 1);
    tok->tokens_.assign(n, std::string());
    tok->types_.assign(n, TokenType::kUnused);
    tok->scores_.assign(n, 0.0f);
    for (auto& [piece, id] : model["vocab"].items()) {
      const auto i = static_cast<size_t>(id.get<int64_t>());
      tok->tokens_[i] = piece;
      tok->types_[i] = tok->byte_fallback_ && parse_byte_token(piece) >= 0 ? TokenType::kByte
                                                                           : TokenType::kNormal;
    }
    std::optional<std::string> unk_name;
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      unk_name = model["unk_token"].get<std::string>();
    }
    for (const json& a : added) {
      const auto i = static_cast<size_t>(a["id"].get<int64_t>());
      const std::string content = a["content"].get<std::string>();
      if (is_true(a, "lstrip") || is_true(a, "rstrip") || is_true(a, "single_word")) {
        return unsupported("added token \"" + content + "\" with lstrip/rstrip/single_word");
      }
      if (is_true(a, "normalized") && !root["normalizer"].is_null()) {
        return unsupported("added token \"" + content + "\" with normalized = true");
      }
      if (!tok->tokens_[i].empty() && tok->tokens_[i] != content) {
        return invalid_argument("tokenizer.json: added token \"" + content + "\" reuses id " +
                                std::to_string(i) + " of \"" + tok->tokens_[i] + "\"");
      }
      tok->tokens_[i] = content;
      tok->types_[i] = is_true(a, "special") ? TokenType::kControl : TokenType::kUserDefined;
    }
    if (unk_name) {
      for (size_t i = 0; i < n; ++i) {
        if (tok->tokens_[i] == *unk_name) {
          tok->unk_id_ = static_cast<int32_t>(i);
          tok->types_[i] = TokenType::kUnknown;
          break;
        }
      }
    }

    // ---- normalizer ----
    const json& normalizer = root.contains("normalizer") ? root["normalizer"] : json();
    std::vector<json> norm_steps;
    if (normalizer.is_object()) {
      if (type_of(normalizer) == "Sequence") {
        for (const json& s : normalizer["normalizers"]) norm_steps.push_back(s);
      } else {
        norm_steps.push_back(normalizer);
      }
    } else if (!normalizer.is_null()) {
      return unsupported("normalizer form");
    }
    for (size_t i = 0; i < norm_steps.size(); ++i) {
      const json& s = norm_steps[i];
      const std::string t = type_of(s);
      if (t == "NFC") {
        tok->is_nfc_ = true;
      } else if (t == "Prepend" && s.value("prepend", "") == kSpmSpace && i == 0) {
        tok->add_space_prefix_ = true;
      } else if (t == "Replace" && s.contains("pattern") && s["pattern"].contains("String") &&
                 s["pattern"]["String"] == " " && s.value("content", "") == kSpmSpace) {
        tok->replace_spaces_ = true;
      } else {
        return unsupported("normalizer " + t + " (" + s.dump() + ")");
      }
    }
    if (tok->is_nfc_ && (tok->add_space_prefix_ || tok->replace_spaces_)) {
      return unsupported("normalizer NFC combined with SentencePiece space handling");
    }

    // ---- pre-tokenizer ----
    const json& pre = root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json();
    std::vector<json> pre_steps;
    if (pre.is_object()) {
      if (type_of(pre) == "Sequence") {
        for (const json& s : pre["pretokenizers"]) pre_steps.push_back(s);
      } else {
        pre_steps.push_back(pre);
      }
    } else if (!pre.is_null()) {
      return unsupported("pre_tokenizer form");
    }
    bool has_byte_level = false;
    for (size_t i = 0; i < pre_steps.size(); ++i) {
      const json& s = pre_steps[i];
      const std::string t = type_of(s);
      if (t == "Split") {
        const std::optional<SplitBehavior> behavior =
            split_behavior_from_name(s.value("behavior", ""));
        if (!behavior) return unsupported("Split behavior " + s.value("behavior", "?"));
        const bool invert = is_true(s, "invert");
        std::string pattern;
        if (s["pattern"].contains("Regex")) {
          pattern = s["pattern"]["Regex"].get<std::string>();
        } else if (s["pattern"].contains("String")) {
          const std::string literal = s["pattern"]["String"].get<std::string>();
          // Gemma 3: Split(" ", MergedWithPrevious) after the " " -> "▁"
          // normalizer. No " " is left to match, so the split never cuts
          // (tokenizers runs the normalizer first); it is dropped.
          if (literal == " " && tok->replace_spaces_ && !invert) continue;
          pattern = regex_quote(literal);
        } else {
          return unsupported("Split pattern " + s["pattern"].dump());
        }
        STRATA_ASSIGN_OR_RETURN(RegexSplitter splitter,
                                RegexSplitter::compile(pattern, *behavior, invert));
        tok->splitters_.push_back(std::move(splitter));
      } else if (t == "ByteLevel") {
        if (i + 1 != pre_steps.size()) return unsupported("ByteLevel before other pre-tokenizers");
        has_byte_level = true;
        if (is_true(s, "add_prefix_space")) {
          if (!tok->splitters_.empty())
            return unsupported("ByteLevel add_prefix_space after Split");
          tok->byte_level_prefix_space_ = true;
        }
        if (!s.contains("use_regex") || is_true(s, "use_regex")) {
          STRATA_ASSIGN_OR_RETURN(RegexSplitter splitter, RegexSplitter::compile(kGpt2Regex));
          tok->splitters_.push_back(std::move(splitter));
        }
      } else {
        return unsupported("pre_tokenizer " + t);
      }
    }
    if (has_byte_level) {
      tok->kind_ = TokenizerKind::kByteLevelBpe;
      if (tok->add_space_prefix_ || tok->replace_spaces_ || tok->byte_fallback_) {
        return unsupported("ByteLevel mixed with SentencePiece normalizers or byte_fallback");
      }
    } else if (tok->replace_spaces_) {
      tok->kind_ = TokenizerKind::kSentencePieceBpe;
    } else {
      return unsupported("BPE without a ByteLevel pre-tokenizer or a \" \" -> \"▁\" normalizer");
    }

    // ---- decoder ----
    const json& decoder = root.contains("decoder") ? root["decoder"] : json();
    if (tok->kind_ == TokenizerKind::kByteLevelBpe) {
      if (type_of(decoder) != "ByteLevel") return unsupported("decoder " + type_of(decoder));
    } else {
      std::vector<json> steps;
      if (type_of(decoder) == "Sequence") {
        for (const json& s : decoder["decoders"]) steps.push_back(s);
      } else {
        steps.push_back(decoder);
      }
      bool has_replace = false;
      for (const json& s : steps) {
        const std::string t = type_of(s);
        if (t == "Replace" && s["pattern"].contains("String") &&
            s["pattern"]["String"] == kSpmSpace && s.value("content", "") == " ") {
          has_replace = true;
        } else if (t == "ByteFallback" || t == "Fuse") {
        } else if (t == "Strip" && s.value("content", "") == " " && s.value("start", 0) <= 1 &&
                   s.value("stop", 0) == 0) {
          tok->strip_leading_space_ = s.value("start", 0) == 1;
        } else {
          return unsupported("decoder " + t + " (" + s.dump() + ")");
        }
      }
      if (!has_replace) return unsupported("SentencePiece decoder without \"▁\" -> \" \"");
    }

    // ---- merges ----
    if (!model.contains("merges") || !model["merges"].is_array()) {
      return invalid_argument("tokenizer.json: model.merges is not an array");
    }
    int32_t rank = 0;
    for (const json& m : model["merges"]) {
      std::string left, right;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos) {
          return invalid_argument("tokenizer.json: merge \"" + s + "\" has no space");
        }
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      } else {
        return invalid_argument("tokenizer.json: malformed merge at rank " + std::to_string(rank));
      }
      const json& vocab = model["vocab"];
      auto l = vocab.find(left), r = vocab.find(right), res = vocab.find(left + right);
      if (l == vocab.end() || r == vocab.end() || res == vocab.end()) {
        return invalid_argument("tokenizer.json: merge \"" + left + " " + right +
                                "\" uses a piece missing from the vocabulary");
      }
      tok->merges_.add(l->get<int32_t>(), r->get<int32_t>(), rank, res->get<int32_t>());
      tok->merge_pairs_.emplace_back(l->get<int32_t>(), r->get<int32_t>());
      ++rank;
    }

    // ---- post-processor (BOS/EOS) ----
    auto id_of = [&](const std::string& name) -> int32_t {
      for (size_t i = 0; i < n; ++i) {
        if (tok->tokens_[i] == name) return static_cast<int32_t>(i);
      }
      return -1;
    };
    const json& post = root.contains("post_processor") ? root["post_processor"] : json();
    if (type_of(post) == "TemplateProcessing") {
      const json& single = post["single"];
      bool seen_sequence = false;
      for (const json& item : single) {
        if (item.contains("Sequence")) {
          seen_sequence = true;
          continue;
        }
        if (!item.contains("SpecialToken")) return unsupported("TemplateProcessing item");
        const std::string name = item["SpecialToken"]["id"].get<std::string>();
        const json& specials = post["special_tokens"];
        if (!specials.contains(name) || specials[name]["ids"].size() != 1) {
          return unsupported("TemplateProcessing special token " + name);
        }
        const int32_t id = specials[name]["ids"][0].get<int32_t>();
        if (!seen_sequence) {
          if (tok->add_bos_) return unsupported("TemplateProcessing with two leading tokens");
          tok->add_bos_ = true;
          tok->bos_id_ = id;
        } else {
          if (tok->add_eos_) return unsupported("TemplateProcessing with two trailing tokens");
          tok->add_eos_ = true;
          tok->eos_id_ = id;
        }
      }
    } else if (!post.is_null() && type_of(post) != "ByteLevel") {
      return unsupported("post_processor " + type_of(post));
    }

    // ---- tokenizer_config.json (optional) ----
    const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
    json config = json::object();
    if (std::filesystem::exists(config_path)) {
      STRATA_ASSIGN_OR_RETURN(std::string config_text, read_file(config_path.string()));
      config = json::parse(config_text);
    }
    if (auto bos = token_field(config, "bos_token"); bos && tok->bos_id_ < 0) {
      tok->bos_id_ = id_of(*bos);
    }
    if (auto eos = token_field(config, "eos_token")) tok->eos_id_ = id_of(*eos);
    if (auto pad = token_field(config, "pad_token")) tok->pad_id_ = id_of(*pad);
    if (config.contains("chat_template") && config["chat_template"].is_string()) {
      tok->chat_template_ = config["chat_template"].get<std::string>();
    }
    // Without a config: the conventional names.
    if (tok->eos_id_ < 0) {
      for (const char* name : {"</s>", "<|endoftext|>", "<|end_of_text|>"}) {
        const int32_t id = id_of(name);
        if (id >= 0 && tok->types_[id] == TokenType::kControl) {
          tok->eos_id_ = id;
          break;
        }
      }
    }
    if (tok->bos_id_ < 0 && tok->kind_ == TokenizerKind::kSentencePieceBpe) {
      tok->bos_id_ = id_of("<s>");
    }
    const int32_t eot = id_of("<|eot_id|>");
    if (eot >= 0) tok->eot_id_ = eot;
  } catch (const json::exception& e) {
    return invalid_argument("tokenizer.json: " + path + ": " + e.what());
  }

  // llama.cpp's name for this pre-tokenizer, for export (none for a
  // SentencePiece BPE that also splits: llama.cpp's "llama" model cannot).
  if (tok->kind_ == TokenizerKind::kSentencePieceBpe) {
    if (tok->splitters_.empty()) tok->pre_name_ = "default";
  } else if (tok->splitters_.size() == 1 && !tok->byte_level_prefix_space_) {
    const std::string& p = tok->splitters_[0].pattern();
    if (p == kQwen2Regex && tok->is_nfc_ && !tok->ignore_merges_) tok->pre_name_ = "qwen2";
    // llama.cpp's "llama-bpe" implies ignore_merges.
    if (p == kLlama3Regex && !tok->is_nfc_ && tok->ignore_merges_) tok->pre_name_ = "llama-bpe";
    if (p == kGpt2Regex && !tok->is_nfc_ && !tok->ignore_merges_) tok->pre_name_ = "gpt-2";
  }
  STRATA_RETURN_IF_ERROR(tok->finalize());
  return tok;
}

}  // namespace strata
