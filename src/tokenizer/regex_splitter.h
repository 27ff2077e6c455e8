// RegexSplitter: one pre-tokenizer split step, a PCRE2 regex (UTF + UCP,
// JIT-compiled when available) that cuts text into pieces the way Hugging
// Face's Split(behavior = Isolated) does: every match is a piece and so is
// every non-empty gap between matches.
//
// Owns the compiled pattern; move-only. split() is const and thread-safe
// (match data is per call). Input must be valid UTF-8.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace strata {

class RegexSplitter {
 public:
  static Result<RegexSplitter> compile(const std::string& pattern);

  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  // Appends the pieces of `text` (views into it) to `pieces`, in order; their
  // concatenation is `text`.
  Status split(std::string_view text, std::vector<std::string_view>* pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  RegexSplitter() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

// Pre-tokenizer regexes by llama.cpp's tokenizer.ggml.pre names.
inline constexpr char kGpt2Regex[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

}  // namespace strata
