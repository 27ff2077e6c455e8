// Tokenizer unit tests that need no oracle: UTF-8 handling, the synthetic
// SentencePiece vocabulary, GGUF loading errors, id range checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_export.h"

namespace strata {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Lossy, ValidTextPassesThrough) {
  const std::string s = "a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80z";  // a é 你 😀 z
  EXPECT_EQ(unicode::to_valid_utf8(s), s);
}

TEST(Utf8Lossy, InvalidBytesBecomeOneReplacementPerMaximalSubpart) {
  EXPECT_EQ(unicode::to_valid_utf8("\xFF"), kReplacement);
  EXPECT_EQ(unicode::to_valid_utf8("\xE4\xBD"
                                   "A"),
            kReplacement + "A");  // truncated 3-byte
  EXPECT_EQ(unicode::to_valid_utf8("\x80\x80"), kReplacement + kReplacement);
  EXPECT_EQ(unicode::to_valid_utf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);
  EXPECT_EQ(unicode::to_valid_utf8("\xF0\x9F\x98"), kReplacement);  // final: incomplete
}

TEST(Utf8Lossy, NotFinalHoldsBackAnIncompleteTail) {
  std::string out;
  EXPECT_EQ(unicode::append_utf8_lossy("ab\xF0\x9F", false, &out), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(unicode::append_utf8_lossy("ab\xF0"
                                       "c",
                                       false, &out),
            4u);  // broken, not pending
  EXPECT_EQ(out, "ab" + kReplacement + "c");
}

TEST(Nfc, ComposesCombiningMarks) {
  EXPECT_EQ(unicode::nfc("e\xCC\x81").value(), "\xC3\xA9");     // e + U+0301 -> é
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB").value(), "\xC3\x85");  // Å (U+212B) -> U+00C5
  EXPECT_EQ(unicode::nfc("plain ascii").value(), "plain ascii");
}

TEST(ByteLevelAlphabet, EveryByteRoundTrips) {
  unicode::ByteLevelAlphabet alphabet;
  for (int b = 0; b < 256; ++b) {
    std::string out;
    alphabet.decode_token(alphabet.encode(static_cast<uint8_t>(b)), &out);
    ASSERT_EQ(out, std::string(1, static_cast<char>(b))) << b;
  }
  EXPECT_EQ(alphabet.encode(' '), "\xC4\xA0");  // Ġ
  EXPECT_EQ(alphabet.encode('A'), "A");
}

TEST(RegexSplitter, IsolatedKeepsMatchesAndGaps) {
  auto s = RegexSplitter::compile(kQwen2Regex);
  ASSERT_TRUE(s.is_ok());
  std::vector<std::string_view> pieces;
  ASSERT_TRUE(s->split("Hello  world 123!", &pieces).is_ok());
  std::vector<std::string> got(pieces.begin(), pieces.end());
  EXPECT_EQ(got, (std::vector<std::string>{"Hello", " ", " world", " ", "1", "2", "3", "!"}));
  EXPECT_FALSE(RegexSplitter::compile("(unclosed").is_ok());
}

// Every Split behavior, with and without invert, against what
// tokenizers@0.23.2's splitPreTokenizer gives for the same literal patterns.
TEST(RegexSplitter, BehaviorsMatchHuggingFace) {
  struct Case {
    const char* pattern;
    SplitBehavior behavior;
    bool invert;
    const char* text;
    std::vector<std::string> want;
  };
  using B = SplitBehavior;
  const std::vector<Case> cases = {
      {"-", B::kRemoved, false, "a-b--c-", {"a", "b", "c"}},
      {"ab", B::kRemoved, false, "xabyababz", {"x", "y", "z"}},
      {"-", B::kRemoved, true, "a-b--c-", {"-", "-", "-", "-"}},
      {" ", B::kRemoved, true, " hello  world ", {" ", " ", " ", " "}},
      {" ", B::kIsolated, false, " hello  world ", {" ", "hello", " ", " ", "world", " "}},
      {"ab", B::kIsolated, true, "xabyababz", {"x", "ab", "y", "ab", "ab", "z"}},
      {"-", B::kMergedWithPrevious, false, "a-b--c-", {"a-", "b-", "-", "c-"}},
      {" ", B::kMergedWithPrevious, false, " hello  world ", {" ", "hello ", " ", "world "}},
      {"ab", B::kMergedWithPrevious, false, "xabyababz", {"xab", "yab", "ab", "z"}},
      {"-", B::kMergedWithPrevious, true, "a-b--c-", {"a", "-b", "-", "-c", "-"}},
      {" ", B::kMergedWithPrevious, true, " hello  world ", {" hello", " ", " world", " "}},
      {"-", B::kMergedWithNext, false, "a-b--c-", {"a", "-b", "-", "-c", "-"}},
      {"ab", B::kMergedWithNext, false, "xabyababz", {"x", "aby", "ab", "abz"}},
      {"-", B::kMergedWithNext, true, "a-b--c-", {"a-", "b-", "-", "c-"}},
      {" ", B::kMergedWithNext, true, " hello  world ", {" ", "hello ", " ", "world "}},
      {"-", B::kContiguous, false, "a-b--c-", {"a", "-", "b", "--", "c", "-"}},
      {"ab", B::kContiguous, false, "xabyababz", {"x", "ab", "y", "abab", "z"}},
      {" ", B::kContiguous, true, " hello  world ", {" ", "hello", "  ", "world", " "}},
  };
  for (const Case& c : cases) {
    auto s = RegexSplitter::compile(c.pattern, c.behavior, c.invert);
    ASSERT_TRUE(s.is_ok());
    std::vector<std::string_view> pieces;
    ASSERT_TRUE(s->split(c.text, &pieces).is_ok());
    EXPECT_EQ(std::vector<std::string>(pieces.begin(), pieces.end()), c.want)
        << c.pattern << " " << static_cast<int>(c.behavior) << " invert=" << c.invert << " on \""
        << c.text << "\"";
  }
  EXPECT_EQ(split_behavior_from_name("MergedWithPrevious"), SplitBehavior::kMergedWithPrevious);
  EXPECT_FALSE(split_behavior_from_name("Sideways"));
}

Result<std::unique_ptr<Tokenizer>> synthetic(int32_t vocab_size, std::vector<uint8_t>* image) {
  GgufWriter writer;
  write_synthetic_spm_vocab(writer, vocab_size, /*seed=*/7);
  *image = writer.serialize();
  auto gguf = GgufFile::parse(image->data(), image->size());
  if (!gguf.is_ok()) return gguf.status();
  return Tokenizer::from_gguf(*gguf);
}

const char* const kTexts[] = {
    "Once upon a time there lived a king.",
    "",
    " leading and trailing  ",
    "tabs\tand\nnewlines\r\n",
    "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
    "<s> not special unless parsed </s>",
    "x",
    "1234567890",
};

class SyntheticVocabTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(SyntheticVocabTest, HasExactSizeAndRoundTrips) {
  std::vector<uint8_t> image;
  auto tok = synthetic(GetParam(), &image);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->vocab_size(), GetParam());
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_EQ((*tok)->token_text(0), "<unk>");
  EXPECT_EQ((*tok)->token_text(3), "<0x00>");
  EXPECT_EQ((*tok)->token_text(258), "<0xFF>");
  EXPECT_TRUE((*tok)->is_eog(2));
  for (const char* text : kTexts) {
    const auto ids = (*tok)->encode(text, /*add_special=*/true, /*parse_special=*/false);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], 1);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < GetParam());
    EXPECT_EQ((*tok)->decode(ids, /*skip_special=*/true), text);
    IncrementalDetokenizer detok(**tok);
    std::string streamed;
    for (int32_t id : ids) streamed += detok.push(id);
    EXPECT_EQ(streamed + detok.flush(), text);
  }
}

TEST_P(SyntheticVocabTest, MergesCommonWords) {
  std::vector<uint8_t> image;
  auto tok = synthetic(GetParam(), &image);
  ASSERT_TRUE(tok.is_ok());
  // "▁the" is one of the first pieces of every size >= 300.
  const auto ids = (*tok)->encode("the", false, false);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ((*tok)->token_text(ids[0]), "\xE2\x96\x81the");
}

TEST_P(SyntheticVocabTest, IsDeterministic) {
  std::vector<uint8_t> a, b;
  ASSERT_TRUE(synthetic(GetParam(), &a).is_ok());
  ASSERT_TRUE(synthetic(GetParam(), &b).is_ok());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Sizes, SyntheticVocabTest, ::testing::Values(300, 301, 512, 4099, 32000));

TEST(Tokenizer, ParseSpecialControlsControlTokens) {
  std::vector<uint8_t> image;
  auto tok = synthetic(512, &image);
  ASSERT_TRUE(tok.is_ok());
  const auto parsed = (*tok)->encode("a</s>", false, /*parse_special=*/true);
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed.back(), 2);
  const auto literal = (*tok)->encode("a</s>", false, /*parse_special=*/false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 2), 0);
  EXPECT_EQ((*tok)->decode(parsed, /*skip_special=*/false), "a</s>");
  EXPECT_EQ((*tok)->decode(parsed, /*skip_special=*/true), "a");
}

TEST(Tokenizer, OutOfRangeIdsAreRejectedNotUndefined) {
  std::vector<uint8_t> image;
  auto tok = synthetic(300, &image);
  ASSERT_TRUE(tok.is_ok());
  const std::vector<int32_t> bad = {5, 300, -1, 2147483647, -2147483647 - 1};
  EXPECT_FALSE((*tok)->check_ids(bad).is_ok());
  EXPECT_FALSE((*tok)->try_decode(bad, false).is_ok());
  EXPECT_EQ((*tok)->try_decode(bad, false).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*tok)->token_to_piece(300), "");
  EXPECT_EQ((*tok)->token_to_piece(-1), "");
  EXPECT_EQ((*tok)->token_text(1 << 30), "");
  EXPECT_FALSE((*tok)->is_eog(-5));
  EXPECT_FALSE((*tok)->is_special(300));
  EXPECT_EQ((*tok)->decode(bad, false), (*tok)->token_to_piece(5));  // bad ids skipped
  IncrementalDetokenizer detok(**tok);
  EXPECT_EQ(detok.push(99999), "");
}

TEST(Tokenizer, TokenToPieceOfBytesAndSpaces) {
  std::vector<uint8_t> image;
  auto tok = synthetic(512, &image);
  ASSERT_TRUE(tok.is_ok());
  EXPECT_EQ((*tok)->token_to_piece(3 + 0x41), "A");
  EXPECT_EQ((*tok)->token_to_piece(3 + 0xE4), "\xE4");
  const auto the = (*tok)->token_id("\xE2\x96\x81the");
  ASSERT_TRUE(the.has_value());
  EXPECT_EQ((*tok)->token_to_piece(*the), " the");
}

TEST(IncrementalDetokenizer, HoldsBackSplitCodePoints) {
  std::vector<uint8_t> image;
  auto tok = synthetic(300, &image);
  ASSERT_TRUE(tok.is_ok());
  // 😀 = F0 9F 98 80 as four byte tokens.
  IncrementalDetokenizer detok(**tok);
  EXPECT_EQ(detok.push(3 + 0xF0), "");
  EXPECT_EQ(detok.push(3 + 0x9F), "");
  EXPECT_EQ(detok.push(3 + 0x98), "");
  EXPECT_EQ(detok.num_pending_bytes(), 3u);
  EXPECT_EQ(detok.push(3 + 0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(detok.push(3 + 0xF0), "");
  EXPECT_EQ(detok.flush(), kReplacement);  // dangling lead byte at the end
}

// Seeded random inputs: arbitrary bytes (invalid UTF-8, NULs, lone
// continuation bytes) must encode to in-range ids and round-trip as their
// lossy UTF-8; arbitrary id sequences must stream exactly like decode().
TEST(TokenizerProperty, RandomBytesAndIdsAreSafeAndConsistent) {
  std::vector<uint8_t> image;
  auto tok = synthetic(512, &image);
  ASSERT_TRUE(tok.is_ok());
  uint64_t state = 12345;
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  const char kAlphabet[] = {'a',    'b',    ' ',    '\n',   '\xC3', '\xA9', '\xE4',
                            '\xBD', '\xA0', '\xF0', '\x9F', '\x98', '\x80', '\xFF',
                            '\0',   '<',    's',    '>',    '/'};
  for (int iter = 0; iter < 500; ++iter) {
    std::string text;
    const uint32_t len = next() % 40;
    for (uint32_t i = 0; i < len; ++i) {
      text += next() % 2 ? kAlphabet[next() % sizeof(kAlphabet)] : static_cast<char>(next());
    }
    const auto ids = (*tok)->encode(text, false, /*parse_special=*/false);
    ASSERT_TRUE((*tok)->check_ids(ids).is_ok());
    const std::string valid = unicode::to_valid_utf8(text);
    if (valid.find("\xE2\x96\x81") == std::string::npos) {  // "▁" reads back as a space
      EXPECT_EQ((*tok)->decode(ids, false), valid);
    }
    std::vector<int32_t> random_ids(next() % 30);
    for (int32_t& id : random_ids) id = static_cast<int32_t>(next() % 600) - 50;  // some invalid
    for (bool skip : {false, true}) {
      IncrementalDetokenizer detok(**tok, skip);
      std::string streamed;
      for (int32_t id : random_ids) streamed += detok.push(id);
      streamed += detok.flush();
      EXPECT_EQ(streamed, (*tok)->decode(random_ids, skip));
    }
  }
}

// ---- GGUF metadata errors ----

Status load_gguf(GgufWriter& writer) {
  const auto image = writer.serialize();
  auto gguf = GgufFile::parse(image.data(), image.size());
  if (!gguf.is_ok()) return gguf.status();
  auto tok = Tokenizer::from_gguf(*gguf);
  return tok.is_ok() ? Status::ok() : tok.status();
}

TEST(TokenizerGguf, RejectsMissingOrUnknownModel) {
  GgufWriter none;
  none.add_string("general.architecture", "llama");
  EXPECT_FALSE(load_gguf(none).is_ok());
  GgufWriter wordpiece;
  wordpiece.add_string("tokenizer.ggml.model", "bert");
  wordpiece.add_string_array("tokenizer.ggml.tokens", {"a"});
  const Status s = load_gguf(wordpiece);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("bert"), std::string::npos) << s.message();
}

TEST(TokenizerGguf, RejectsBadIdsTypesAndMerges) {
  auto base = [](GgufWriter& w) {
    w.add_string("tokenizer.ggml.model", "llama");
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      tokens.push_back(name);
    }
    w.add_string_array("tokenizer.ggml.tokens", tokens);
  };
  GgufWriter bos_out_of_range;
  base(bos_out_of_range);
  bos_out_of_range.add_u32("tokenizer.ggml.bos_token_id", 259);
  EXPECT_FALSE(load_gguf(bos_out_of_range).is_ok());

  GgufWriter short_types;
  base(short_types);
  short_types.add_i32_array("tokenizer.ggml.token_type", {1, 3});
  EXPECT_FALSE(load_gguf(short_types).is_ok());

  GgufWriter bad_type;
  base(bad_type);
  std::vector<int32_t> types(259, 6);
  types[5] = 42;
  bad_type.add_i32_array("tokenizer.ggml.token_type", types);
  EXPECT_FALSE(load_gguf(bad_type).is_ok());

  GgufWriter ok;
  base(ok);
  EXPECT_TRUE(load_gguf(ok).is_ok());

  GgufWriter bpe_no_merges;
  bpe_no_merges.add_string("tokenizer.ggml.model", "gpt2");
  unicode::ByteLevelAlphabet alphabet;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(alphabet.encode(static_cast<uint8_t>(b)));
  bpe_no_merges.add_string_array("tokenizer.ggml.tokens", tokens);
  EXPECT_FALSE(load_gguf(bpe_no_merges).is_ok());

  GgufWriter bpe_bad_merge;
  bpe_bad_merge.add_string("tokenizer.ggml.model", "gpt2");
  bpe_bad_merge.add_string_array("tokenizer.ggml.tokens", tokens);
  bpe_bad_merge.add_string_array("tokenizer.ggml.merges", {"a b"});  // "ab" is no token
  EXPECT_FALSE(load_gguf(bpe_bad_merge).is_ok());

  GgufWriter bpe_bad_pre;
  bpe_bad_pre.add_string("tokenizer.ggml.model", "gpt2");
  bpe_bad_pre.add_string("tokenizer.ggml.pre", "no-such-pre");
  bpe_bad_pre.add_string_array("tokenizer.ggml.tokens", tokens);
  bpe_bad_pre.add_string_array("tokenizer.ggml.merges", {});
  EXPECT_EQ(load_gguf(bpe_bad_pre).code(), StatusCode::kUnimplemented);
}

// ---- tokenizer.json errors ----

std::string write_temp(const std::string& name, const std::string& body) {
  const auto dir = std::filesystem::path(STRATA_BINARY_DIR) / "tokenizer_test_tmp" / name;
  std::filesystem::create_directories(dir);
  const auto path = dir / "tokenizer.json";
  std::ofstream(path) << body;
  return path.string();
}

TEST(TokenizerJson, RejectsUnsupportedAndMalformedFiles) {
  auto missing = Tokenizer::from_hf_json("/nonexistent/tokenizer.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);

  auto garbage = Tokenizer::from_hf_json(write_temp("garbage", "{not json"));
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);

  auto wordpiece = Tokenizer::from_hf_json(
      write_temp("wordpiece", R"({"model": {"type": "WordPiece", "vocab": {}}})"));
  EXPECT_EQ(wordpiece.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(wordpiece.status().message().find("WordPiece"), std::string::npos);

  auto metaspace = Tokenizer::from_hf_json(write_temp("metaspace", R"({
    "normalizer": null, "pre_tokenizer": {"type": "Metaspace", "replacement": "x"},
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"));
  EXPECT_EQ(metaspace.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(metaspace.status().message().find("Metaspace"), std::string::npos);

  auto lstrip = Tokenizer::from_hf_json(write_temp("lstrip", R"({
    "added_tokens": [{"id": 1, "content": "<m>", "lstrip": true, "special": true}],
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"));
  EXPECT_EQ(lstrip.status().code(), StatusCode::kUnimplemented);

  auto bad_id = Tokenizer::from_hf_json(write_temp("bad_id", R"({
    "model": {"type": "BPE", "vocab": {"a": -4}, "merges": []}})"));
  EXPECT_FALSE(bad_id.is_ok());
}

}  // namespace
}  // namespace strata
