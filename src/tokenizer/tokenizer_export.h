// Writers of llama.cpp-compatible tokenizer metadata (tokenizer.ggml.*) into
// a GgufWriter, for the tiny-model writer and for tests.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_writer.h"
#include "util/status.h"

namespace strata {

// Converts a Hugging Face tokenizer.json (and a tokenizer_config.json beside
// it, if any) into tokenizer.ggml.{model, pre, tokens, scores, token_type,
// merges, bos/eos/unknown/padding_token_id, add_bos_token, add_eos_token,
// add_space_prefix} and tokenizer.chat_template. Byte-level BPE becomes
// "gpt2" with ranked merges; SentencePiece-style BPE becomes "llama" whose
// scores reproduce the merge order (score = -(rank of the first merge making
// the piece + 1)). Fails, writing nothing, for files the Tokenizer cannot load
// or whose pre-tokenizer has no llama.cpp name.
Status export_hf_tokenizer_to_gguf(const std::string& tokenizer_json, GgufWriter& writer);

// A synthetic SentencePiece BPE vocabulary of exactly `vocab_size` tokens
// (>= 300): <unk>=0, <s>=1, </s>=2, <0x00>..<0xFF>, then "▁", letters, digits
// and punctuation, then pieces like "▁the" built so that every piece longer
// than one character splits into two earlier pieces; scores fall with the id
// so the merge order is the id order. Deterministic in `seed`. Any text
// round-trips through it (byte fallback covers what the pieces do not).
// Requires vocab_size >= 300 (asserted: a programming error, not input).
void write_synthetic_spm_vocab(GgufWriter& writer, int32_t vocab_size, uint64_t seed);

}  // namespace strata
