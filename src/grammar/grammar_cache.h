// GrammarCache: compiled grammars bound to one vocabulary, keyed by a hash
// of (kind, text), so repeated schemas (the common case: one tool set, one
// response format per application) skip compilation and keep their
// already-computed token masks.
//
// Bounded: at most Options::max_entries grammars, least recently used
// evicted (a matcher still holding one keeps it alive through its
// shared_ptr). Errors are not cached. Thread-safe; compilation runs outside
// the lock, so two threads asking for the same new grammar may both compile
// it (the first stored wins).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_spec.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"
#include "util/status.h"

namespace strata {

class GrammarCache {
 public:
  struct Options {
    size_t max_entries = 256;  // compiled grammars kept
  };

  GrammarCache(std::shared_ptr<const TokenTrie> trie, Options options);

  Result<std::shared_ptr<const TokenMaskCache>> get(const GrammarSpec& spec);

  size_t size() const;
  uint64_t num_hits() const;
  uint64_t num_misses() const;
  const std::shared_ptr<const TokenTrie>& trie() const { return trie_; }

 private:
  struct Entry {
    GrammarSpec spec;
    std::shared_ptr<const TokenMaskCache> cache;
    std::list<std::string>::iterator lru;
  };
  static std::string key_of(const GrammarSpec& spec);

  std::shared_ptr<const TokenTrie> trie_;
  Options options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // by key_of()
  std::list<std::string> lru_;                      // most recent first
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace strata
