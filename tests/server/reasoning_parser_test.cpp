// ReasoningParser: vLLM's deepseek_r1 / qwen3 splits, and the streaming
// split (any way of cutting the output into deltas) equal to the whole one.
#include "server/reasoning_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::server {
namespace {

const ReasoningParserKind kR1 = ReasoningParserKind::kDeepSeekR1;
const ReasoningParserKind kQwen3 = ReasoningParserKind::kQwen3;

TEST(ReasoningParser, Names) {
  EXPECT_EQ(reasoning_parser_from_name("deepseek_r1"), kR1);
  EXPECT_EQ(reasoning_parser_from_name("qwen3"), kQwen3);
  EXPECT_EQ(reasoning_parser_from_name(""), ReasoningParserKind::kNone);
  EXPECT_FALSE(reasoning_parser_from_name("deepseek-r1"));
  EXPECT_STREQ(reasoning_parser_name(kQwen3), "qwen3");
}

TEST(ReasoningParser, WholeOutputSplitsAsVllm) {
  ReasoningSplit s = ReasoningParser::split(kR1, false, "let me think</think>\n\nParis.");
  EXPECT_EQ(s.reasoning, "let me think");
  EXPECT_EQ(s.content, "\n\nParis.");
  // The model's own <think> is dropped.
  s = ReasoningParser::split(kQwen3, false, "<think>\nhmm\n</think>\n\nParis.");
  EXPECT_EQ(s.reasoning, "\nhmm\n");
  EXPECT_EQ(s.content, "\n\nParis.");
  // Cut off while thinking: all reasoning, content null.
  s = ReasoningParser::split(kR1, false, "<think>still going");
  EXPECT_EQ(s.reasoning, "still going");
  EXPECT_FALSE(s.content);
  // Nothing after </think>: content null.
  s = ReasoningParser::split(kQwen3, false, "done</think>");
  EXPECT_EQ(s.reasoning, "done");
  EXPECT_FALSE(s.content);
  // qwen3 with enable_thinking false: all content, reasoning null.
  s = ReasoningParser::split(kQwen3, true, "Paris.</think>x");
  EXPECT_FALSE(s.reasoning);
  EXPECT_EQ(s.content, "Paris.</think>x");
  // deepseek_r1 has no such switch.
  s = ReasoningParser::split(kR1, true, "a</think>b");
  EXPECT_EQ(s.reasoning, "a");
  EXPECT_EQ(s.content, "b");
  // After the end tag everything is content, tags included.
  s = ReasoningParser::split(kR1, false, "a</think>b<think>c</think>d");
  EXPECT_EQ(s.reasoning, "a");
  EXPECT_EQ(s.content, "b<think>c</think>d");
  // Only the first <think> is dropped; a second one is reasoning text.
  s = ReasoningParser::split(kR1, false, "<think>a<think>b</think>");
  EXPECT_EQ(s.reasoning, "a<think>b");
  // Near-tags are text.
  s = ReasoningParser::split(kR1, false, "</thin></think</think>ok<");
  EXPECT_EQ(s.reasoning, "</thin></think");
  EXPECT_EQ(s.content, "ok<");
}

// Feeds `pieces` one by one (the final one with finish()).
ReasoningDelta stream(ReasoningParserKind kind, bool disabled,
                      const std::vector<std::string>& pieces) {
  ReasoningParser p(kind, disabled);
  ReasoningDelta all;
  for (const std::string& piece : pieces) {
    ReasoningDelta d = p.push(piece);
    // Nothing emitted may end inside a tag that is still undecided.
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  ReasoningDelta tail = p.finish();
  all.reasoning += tail.reasoning;
  all.content += tail.content;
  return all;
}

void expect_same(ReasoningParserKind kind, bool disabled, const std::string& text,
                 const ReasoningDelta& d) {
  const ReasoningSplit whole = ReasoningParser::split(kind, disabled, text);
  EXPECT_EQ(d.reasoning, whole.reasoning.value_or("")) << text;
  EXPECT_EQ(d.content, whole.content.value_or("")) << text;
}

TEST(ReasoningParser, StreamingSplitEqualsWholeAtEveryByteBoundary) {
  const std::vector<std::string> outputs = {
      "<think>\nThe user asks — 考虑 {x}.\n</think>\n\nParis 🇫🇷.",
      "reasoning only, cut off </thi",
      "a</think>b</think>c",
      "<think></think>",
      "<thin<think>x</think",
      "</think>all content",
      "no tags at all <",
      "",
  };
  for (const ReasoningParserKind kind : {kR1, kQwen3}) {
    for (const bool disabled : {false, true}) {
      for (const std::string& text : outputs) {
        // Two pieces, cut at every byte.
        for (size_t cut = 0; cut <= text.size(); ++cut) {
          expect_same(kind, disabled, text,
                      stream(kind, disabled, {text.substr(0, cut), text.substr(cut)}));
        }
        // One byte per delta, and three pieces.
        std::vector<std::string> bytes;
        for (char c : text) bytes.emplace_back(1, c);
        expect_same(kind, disabled, text, stream(kind, disabled, bytes));
        for (size_t a = 0; a <= text.size(); ++a) {
          for (size_t b = a; b <= text.size(); b += 3) {
            expect_same(
                kind, disabled, text,
                stream(kind, disabled, {text.substr(0, a), text.substr(a, b - a), text.substr(b)}));
          }
        }
      }
    }
  }
}

TEST(ReasoningParser, PartialTagsAreHeldBack) {
  ReasoningParser p(kR1, false);
  ReasoningDelta d = p.push("abc</th");
  EXPECT_EQ(d.reasoning, "abc");
  EXPECT_EQ(d.content, "");
  d = p.push("ink>Hi");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Hi");
  // A held-back start of <think> at the very beginning.
  ReasoningParser q(kQwen3, false);
  EXPECT_EQ(q.push("<").reasoning, "");
  EXPECT_EQ(q.push("think>").reasoning, "");
  EXPECT_EQ(q.push("x<").reasoning, "x");
  EXPECT_EQ(q.finish().reasoning, "<");
  EXPECT_FALSE(ReasoningParser(kQwen3, true).is_active());
  EXPECT_FALSE(ReasoningParser(ReasoningParserKind::kNone, false).is_active());
}

}  // namespace
}  // namespace strata::server
