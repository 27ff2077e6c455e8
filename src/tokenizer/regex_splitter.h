// RegexSplitter: one pre-tokenizer split step, a PCRE2 regex (UTF + UCP,
// JIT-compiled when available) that cuts text into pieces the way Hugging
// Face's Split pre-tokenizer does. The text is cut into alternating gaps and
// matches; `invert` swaps the two roles; then the behavior decides the
// pieces (tokenizers' SplitDelimiterBehavior):
//   Isolated            every match and every gap is a piece
//   Removed             the gaps only
//   MergedWithPrevious  each match is appended to the piece before it
//   MergedWithNext      each match is prepended to the piece after it
//   Contiguous          runs of adjacent matches become one piece
// Empty pieces are dropped. Empty matches are skipped (no pattern strata
// loads produces them at a piece boundary).
//
// Owns the compiled pattern; move-only. split() is const and thread-safe
// (match data is per call). Input must be valid UTF-8.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace strata {

enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

// tokenizer.json's behavior names ("Isolated", ...); nullopt when unknown.
std::optional<SplitBehavior> split_behavior_from_name(std::string_view name);

class RegexSplitter {
 public:
  static Result<RegexSplitter> compile(const std::string& pattern,
                                       SplitBehavior behavior = SplitBehavior::kIsolated,
                                       bool invert = false);

  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  // Appends the pieces of `text` (views into it) to `pieces`, in order; their
  // concatenation is `text`.
  Status split(std::string_view text, std::vector<std::string_view>* pieces) const;

  const std::string& pattern() const { return pattern_; }
  SplitBehavior behavior() const { return behavior_; }
  bool invert() const { return invert_; }

 private:
  RegexSplitter() = default;
  std::string pattern_;
  SplitBehavior behavior_ = SplitBehavior::kIsolated;
  bool invert_ = false;
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
