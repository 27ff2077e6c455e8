// Benchmark datasets: the list of requests a `strata bench serve` run sends.
// Each BenchRequest is one /v1/completions prompt (token ids or text) with
// the number of tokens to generate. Generators are pure and deterministic
// by seed on every platform (Xoshiro256, integer mapping of our own).
//
//  random:        prompt lengths uniform in [len*(1-r), len*(1+r)], ids
//                 uniform in [kFirstRandomTokenId, vocab_size).
//  shared-prefix: G groups; each group has a random prefix of P ids, each
//                 prompt = its group's prefix + S unique random ids; K
//                 prompts per group, interleaved: g0 g1 .. g(G-1) g0 g1 ...
//  jsonl:         one JSON object per line: "prompt" (string or id array),
//                 optional "max_tokens" or "output_len".
// Multi-turn chat sessions live in multi_turn.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/xoshiro.h"

namespace strata::loadgen {

// The lowest id a random prompt uses: low ids are often special tokens
// (unk/bos/eos in SentencePiece vocabularies).
inline constexpr int32_t kFirstRandomTokenId = 3;

struct BenchRequest {
  // Exactly one of these is the prompt: ids when non-empty, else the text.
  std::vector<int32_t> prompt_ids;
  std::string prompt_text;
  // Prompt tokens as the dataset knows them: prompt_ids.size(), or -1 for a
  // text prompt (the server's usage tells the real count).
  int64_t num_prompt_tokens = -1;
  int32_t num_output_tokens = 0;  // max_tokens sent (EOS ignored)
};

struct RandomDatasetOptions {
  int64_t num_prompts = 100;
  int32_t input_len = 128;
  int32_t output_len = 128;
  double range_ratio = 0.0;  // [0, 1)
  int32_t vocab_size = 0;    // > kFirstRandomTokenId
  uint64_t seed = 0;
};

struct SharedPrefixOptions {
  int32_t num_groups = 4;         // G
  int32_t prefix_len = 256;       // P
  int32_t suffix_len = 64;        // S
  int32_t prompts_per_group = 8;  // K
  int32_t output_len = 128;
  int32_t vocab_size = 0;
  uint64_t seed = 0;
};

// Integer uniform in [lo, hi] (inclusive) from one 64-bit draw; the modulo
// bias is below 2^-32 for the ranges used here.
int64_t uniform_int(Xoshiro256* rng, int64_t lo, int64_t hi);

// Length uniform in [floor(len*(1-r)), floor(len*(1+r))], at least 1.
int32_t sample_length(Xoshiro256* rng, int32_t len, double range_ratio);

Result<std::vector<BenchRequest>> make_random_dataset(const RandomDatasetOptions& opt);
Result<std::vector<BenchRequest>> make_shared_prefix_dataset(const SharedPrefixOptions& opt);

// Parses JSONL text (blank lines skipped). Requests without a length get
// default_output_len. Keeps the first max_prompts lines (0 = all). Errors
// name the line.
Result<std::vector<BenchRequest>> parse_jsonl_dataset(std::string_view text,
                                                      int32_t default_output_len,
                                                      int64_t max_prompts);
Result<std::vector<BenchRequest>> load_jsonl_dataset(const std::string& path,
                                                     int32_t default_output_len,
                                                     int64_t max_prompts);

}  // namespace strata::loadgen
