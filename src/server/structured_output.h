// Structured outputs at the API: the constraint fields of a /v1/completions
// or /v1/chat/completions body, turned into one GrammarSpec for the grammar
// engine (src/grammar), compiled through a GrammarCache bound to the model's
// vocabulary, and the check of a finished output against it.
//
// Fields read (issue 18, item 3):
//   response_format  {"type": "text"}                      no constraint
//                    {"type": "json_object"}               any JSON object
//                    {"type": "json_schema",
//                     "json_schema": {"name", "schema", "strict", ...}}
//   structured_outputs (vLLM)  exactly one of "json" (schema object or text),
//                    "regex", "choice" (array of strings), "grammar" (GBNF),
//                    "json_object": true
//   guided_json / guided_regex / guided_choice / guided_grammar (vLLM's older
//                    names of the same four); guided_decoding_backend is
//                    accepted and ignored (there is one backend).
// More than one constraint in a request is a 400: silently preferring one
// would be the non-conformance issue 18 is about. Unknown keys inside these
// objects (e.g. whitespace_pattern, structural_tag) are 400s naming them.
//
// Schemas are re-read from the raw body in document order
// (nlohmann::ordered_json): the grammar generates properties in schema
// order, and the request's nlohmann::json sorts keys.
//
// Pure functions plus StructuredOutputCompiler (one per server, thread-safe).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "grammar/grammar_cache.h"
#include "grammar/grammar_spec.h"
#include "grammar/token_mask_cache.h"
#include "grammar/token_trie.h"
#include "server/api_error.h"
#include "util/status.h"

namespace strata::server {

struct StructuredOutput {
  GrammarSpec spec;
  std::string param;  // the request field it came from, for errors and logs
};

// Top-level body fields this module owns (for the protocol's unknown-field
// check).
bool is_structured_output_field(std::string_view key);

// Reads the constraint fields of `body` (the parsed request) into *out
// (std::nullopt when the request has none, or response_format text).
// `raw_body` is the request text, re-parsed in document order only when a
// schema is present. Errors are 400s naming the field.
std::optional<ApiError> parse_structured_output(const nlohmann::json& body,
                                                std::string_view raw_body,
                                                std::optional<StructuredOutput>* out);

// Compiles constraints into token-mask caches for one vocabulary. Grammars
// the engine refuses (an unsupported JSON Schema keyword, a bad regex or
// GBNF) are 400s whose message is the grammar engine's (it names the keyword
// and JSON path, the regex offset, or the GBNF line:column).
class StructuredOutputCompiler {
 public:
  StructuredOutputCompiler(std::shared_ptr<const TokenTrie> trie, GrammarCache::Options options);

  std::optional<ApiError> compile(const StructuredOutput& constraint,
                                  std::shared_ptr<const TokenMaskCache>* out);
  std::optional<ApiError> compile_spec(const GrammarSpec& spec, const std::string& param,
                                       std::shared_ptr<const TokenMaskCache>* out);
  // Grammars built in IR (tool-call grammars: the parameter schemas wrapped
  // in the call syntax), cached under `key`; build runs on a miss only.
  std::optional<ApiError> compile_keyed(const std::string& key,
                                        const std::function<Result<Grammar>()>& build,
                                        const std::string& param,
                                        std::shared_ptr<const TokenMaskCache>* out);

  // Post-generation check of an output that finished inside its grammar
  // (finish_reason stop): the text is walked through a fresh matcher of the
  // same grammar to an accepting end, and JSON kinds must parse as JSON.
  // Independent of the sampling path (masks, jump-forward retokenization,
  // detokenization), so a defect there shows up here. A violation should be
  // impossible: it is counted and reported to the hook (a log line and the
  // /metrics counter), and the response is still sent.
  Status check_output(const StructuredOutput& constraint, const TokenMaskCache& grammar,
                      std::string_view text);
  Status check_output(GrammarKind kind, const TokenMaskCache& grammar, std::string_view text);

  // Called once per violation with the constraint's param and the reason.
  void set_violation_hook(std::function<void(const std::string&, const std::string&)> hook);
  uint64_t num_violations() const { return violations_.load(std::memory_order_relaxed); }

  GrammarCache& cache() { return cache_; }
  const std::shared_ptr<const TokenTrie>& trie() const { return cache_.trie(); }

 private:
  GrammarCache cache_;
  std::mutex keyed_mu_;
  std::unordered_map<std::string, std::shared_ptr<const TokenMaskCache>> keyed_;
  std::deque<std::string> keyed_order_;  // oldest first, bounded by max_entries
  size_t max_keyed_;
  std::atomic<uint64_t> violations_{0};
  std::function<void(const std::string&, const std::string&)> hook_;
};

// The check alone (no counting): Status::ok() when `text` is a complete
// sentence of the grammar (and valid JSON for the JSON kinds).
Status output_satisfies_grammar(GrammarKind kind, const TokenMaskCache& grammar,
                                std::string_view text);

}  // namespace strata::server
