#include "engine/stop_string_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata {
namespace {

// Feeds `deltas`; returns everything emitted (plus finish() if no stop).
std::string run(StopStringMatcher& m, const std::vector<std::string>& deltas,
                std::vector<std::string>* emitted = nullptr) {
  std::string out;
  for (const std::string& d : deltas) {
    std::string e = m.feed(d);
    if (emitted) emitted->push_back(e);
    out += e;
  }
  if (!m.is_stopped()) out += m.finish();
  return out;
}

TEST(StopStringMatcher, MatchAcrossDeltasIsNotEmitted) {
  StopStringMatcher m({"STOP"});
  std::vector<std::string> emitted;
  EXPECT_EQ(run(m, {"abc S", "T", "OP tail"}, &emitted), "abc ");
  EXPECT_TRUE(m.is_stopped());
  // "S" and "T" were held back until the match was decided.
  EXPECT_EQ(emitted, (std::vector<std::string>{"abc ", "", ""}));
  EXPECT_EQ(m.feed("more"), "");
}

TEST(StopStringMatcher, HeldBackTextIsReleasedWhenRuledOut) {
  StopStringMatcher m({"STOP"});
  EXPECT_EQ(m.feed("xST"), "x");
  EXPECT_EQ(m.feed("Ox"), "STOx");
  EXPECT_FALSE(m.is_stopped());
  EXPECT_EQ(m.feed("S"), "");
  EXPECT_EQ(m.finish(), "S");
}

TEST(StopStringMatcher, EarliestOfSeveralStopsWins) {
  StopStringMatcher m({"world", "lo w", ""});
  EXPECT_EQ(run(m, {"hel", "lo wor", "ld"}), "hel");
  EXPECT_TRUE(m.is_stopped());
}

TEST(StopStringMatcher, OverlappingPrefixIsFound) {
  // "aab" inside "aaab": the hold must keep the longest candidate suffix.
  StopStringMatcher m({"aab"});
  EXPECT_EQ(run(m, {"a", "a", "a", "b", "c"}), "a");
  EXPECT_TRUE(m.is_stopped());
}

TEST(StopStringMatcher, MatchDisabledBeforeMinTokens) {
  StopStringMatcher m({"ab"});
  EXPECT_EQ(m.feed("xab", /*can_match=*/false), "xab");
  EXPECT_FALSE(m.is_stopped());
  EXPECT_EQ(m.feed("a"), "");
  EXPECT_EQ(m.feed("b"), "");
  EXPECT_TRUE(m.is_stopped());
}

TEST(StopStringMatcher, MultiByteStopString) {
  StopStringMatcher m({"\xC3\xA9t\xC3\xA9"});  // "été"
  EXPECT_EQ(run(m, {"un \xC3\xA9", "t", "\xC3\xA9 chaud"}), "un ");
  EXPECT_TRUE(m.is_stopped());
}

TEST(StopStringMatcher, NoStopStringsPassesEverythingThrough) {
  StopStringMatcher m({});
  EXPECT_FALSE(m.has_stop_strings());
  EXPECT_EQ(m.feed("abc"), "abc");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopStringMatcher, ReportsTheEarliestMatchAndCanKeepIt) {
  StopStringMatcher m({"zz", "lo w", "o"});
  EXPECT_EQ(run(m, {"hel", "lo wo", "rld"}), "hel");
  EXPECT_EQ(m.matched(), "lo w");  // starts first, although "o" is also there
  StopStringMatcher keep({"lo w"}, /*include_stop=*/true);
  EXPECT_EQ(run(keep, {"hel", "lo wo", "rld"}), "hello w");
  EXPECT_EQ(keep.matched(), "lo w");
  // Two stop strings starting at the same byte: the first listed wins.
  StopStringMatcher tie({"ab", "abc"}, true);
  EXPECT_EQ(run(tie, {"xabcd"}), "xab");
  EXPECT_EQ(tie.matched(), "ab");
}

}  // namespace
}  // namespace strata
