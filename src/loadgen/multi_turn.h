// Multi-turn chat sessions for `--dataset-name multi-turn`. A session is a
// fixed list of user messages; the benchmark sends them one turn at a time
// to /v1/chat/completions, each request carrying the whole history (every
// earlier user message and the assistant's actual replies), and sends turn
// t+1 only after turn t's answer has fully arrived.
//
// User messages are text (chat needs text, and we may not have the server's
// tokenizer): `user_len_words` words drawn from a fixed list of common
// English words, each of which is one token in typical BPE vocabularies, so
// the length is close to that many tokens; the server's usage gives the
// exact prompt count. Deterministic by seed. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace strata::loadgen {

struct MultiTurnOptions {
  int32_t num_sessions = 8;
  int32_t num_turns = 4;
  int32_t user_len_words = 32;  // words per user message
  int32_t output_len = 64;      // max_tokens per turn (EOS ignored)
  uint64_t seed = 0;
};

struct ChatSession {
  std::vector<std::string> user_messages;  // one per turn
  int32_t output_len = 0;
};

Result<std::vector<ChatSession>> make_multi_turn_sessions(const MultiTurnOptions& opt);

}  // namespace strata::loadgen
