#include "grammar/grammar_cache.h"

#include <xxhash.h>

namespace strata {

GrammarCache::GrammarCache(std::shared_ptr<const TokenTrie> trie, Options options)
    : trie_(std::move(trie)), options_(options) {}

// 128-bit XXH3 of kind and text; the entry keeps the spec, and a lookup
// compares it, so a collision can never hand out the wrong grammar.
std::string GrammarCache::key_of(const GrammarSpec& spec) {
  const XXH128_hash_t h = XXH3_128bits_withSeed(spec.text.data(), spec.text.size(),
                                                static_cast<uint64_t>(spec.kind) + 1);
  return std::string(reinterpret_cast<const char*>(&h), sizeof h);
}

Result<std::shared_ptr<const TokenMaskCache>> GrammarCache::get(const GrammarSpec& spec) {
  const std::string key = key_of(spec);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.spec.kind == spec.kind &&
        it->second.spec.text == spec.text) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      ++hits_;
      return it->second.cache;
    }
    ++misses_;
  }
  STRATA_ASSIGN_OR_RETURN(Grammar g, build_grammar(spec));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled,
                          CompiledGrammar::compile(g));
  auto cache = std::make_shared<const TokenMaskCache>(std::move(compiled), trie_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (it->second.spec.kind == spec.kind && it->second.spec.text == spec.text)
      return it->second.cache;
    lru_.erase(it->second.lru);  // a hash collision: the newer spec replaces it
    entries_.erase(it);
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{spec, cache, lru_.begin()});
  while (entries_.size() > options_.max_entries) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  return std::shared_ptr<const TokenMaskCache>(cache);
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}
uint64_t GrammarCache::num_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
uint64_t GrammarCache::num_misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace strata
