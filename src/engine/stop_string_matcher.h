// StopStringMatcher: finds stop strings in a stream of text deltas, across
// token boundaries, and decides which text is safe to emit.
//
// feed(delta) returns the text that can be emitted now. Text that could be
// the start of a stop string (a suffix of the text so far that is a proper
// prefix of some stop string) is held back until later text rules the match
// in or out. When a stop string appears, is_stopped() becomes true and the
// text before the earliest match is the last thing emitted (with the stop
// string itself when include_stop is set); everything after it is dropped. finish() returns the
// held-back text when the stream ends for another reason.
//
// Invariant: every emitted byte precedes any possible match, so the
// concatenation of everything returned equals the full text truncated at the
// first stop string (or the full text when none occurs). Because stop strings
// are valid UTF-8 and a held-back suffix starts with a stop string's first
// byte, emitted text never ends inside a code point that the input completed.
// Not thread-safe: one per choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata {

class StopStringMatcher {
 public:
  // Empty stop strings are ignored. `include_stop`: the matched stop string
  // is emitted too (vLLM's include_stop_str_in_output).
  explicit StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop = false);

  bool has_stop_strings() const { return !stops_.empty(); }
  bool is_stopped() const { return is_stopped_; }
  // The stop string that matched (after is_stopped()); the earliest match,
  // and the first listed of those that start there.
  const std::string& matched() const { return matched_; }

  // Appends `delta`; returns the text now safe to emit. When `can_match` is
  // false (before min_tokens) nothing is matched or held back. After a stop,
  // returns "".
  std::string feed(std::string_view delta, bool can_match = true);
  // The held-back text (no stop string completed); resets the hold.
  std::string finish();

 private:
  // Length of the longest suffix of pending_ that is a proper prefix of a
  // stop string.
  size_t held_suffix_length() const;

  std::vector<std::string> stops_;
  std::string pending_;  // fed but not yet emitted
  std::string matched_;
  bool include_stop_ = false;
  bool is_stopped_ = false;
};

}  // namespace strata
