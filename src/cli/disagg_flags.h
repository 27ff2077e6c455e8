// Disaggregation flags of `strata serve` (docs/disagg.md): --role,
// --kv-transfer-host, --kv-transfer-port, --prefill-peer (repeatable),
// --remote-prefill, --kv-transfer-min-deadline. Chunks are --kv-chunk-tokens
// tokens (an engine flag), equal on every worker of a deployment.
#pragma once

#include <string>

#include "disagg/worker_role.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace strata::cli {

struct DisaggFlags {
  std::string role = "both";
  std::string remote_prefill = "auto";
  disagg::WorkerRoleOptions options;
};

void add_disagg_flags(CLI::App* app, DisaggFlags* flags);
Result<disagg::WorkerRoleOptions> to_worker_role_options(const DisaggFlags& flags);

}  // namespace strata::cli
