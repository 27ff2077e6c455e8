// The start-up log of `strata serve`, like vLLM's: what was loaded (model
// file, architecture, shapes, weight types), how it runs (kernel ISA,
// threads), what the KV pool holds (blocks, tokens, bytes, and the
// concurrency that gives at --max-model-len). The KV tiers' reachability is
// logged by KvTierManager when it pings them at creation; the bound address
// once the server listens.
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model_weights.h"

namespace strata::cli {

// The lines, without a prefix, in order; warnings start with "warning: "
// (a pool smaller than one --max-model-len request).
std::vector<std::string> startup_log_lines(const std::string& model_path,
                                           const ModelWeights& weights, const Engine& engine);

}  // namespace strata::cli
