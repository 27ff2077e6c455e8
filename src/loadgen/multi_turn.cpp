#include "loadgen/multi_turn.h"

#include <array>

#include "loadgen/dataset.h"
#include "util/xoshiro.h"

namespace strata::loadgen {
namespace {

constexpr std::array<const char*, 64> kWords = {
    "the",  "of",    "and",   "to",   "in",   "is",    "you",   "that",  "it",   "he",    "was",
    "for",  "on",    "are",   "as",   "with", "his",   "they",  "at",    "be",   "this",  "have",
    "from", "or",    "one",   "had",  "by",   "word",  "but",   "not",   "what", "all",   "were",
    "we",   "when",  "your",  "can",  "said", "there", "use",   "an",    "each", "which", "she",
    "do",   "how",   "their", "if",   "will", "up",    "other", "about", "out",  "many",  "then",
    "them", "these", "so",    "some", "her",  "would", "make",  "like",  "him"};

}  // namespace

Result<std::vector<ChatSession>> make_multi_turn_sessions(const MultiTurnOptions& opt) {
  if (opt.num_sessions < 1 || opt.num_turns < 1 || opt.user_len_words < 1 || opt.output_len < 1) {
    return invalid_argument(
        "loadgen: multi-turn needs --mt-num-sessions, --mt-turns, --mt-user-len and "
        "--output-len >= 1");
  }
  Xoshiro256 rng(opt.seed);
  std::vector<ChatSession> sessions(static_cast<size_t>(opt.num_sessions));
  for (ChatSession& s : sessions) {
    s.output_len = opt.output_len;
    for (int32_t t = 0; t < opt.num_turns; ++t) {
      std::string msg;
      for (int32_t w = 0; w < opt.user_len_words; ++w) {
        if (w > 0) msg += ' ';
        msg += kWords[static_cast<size_t>(uniform_int(&rng, 0, kWords.size() - 1))];
      }
      s.user_messages.push_back(std::move(msg));
    }
  }
  return sessions;
}

}  // namespace strata::loadgen
