#include "cli/disagg_flags.h"

#include <CLI/CLI.hpp>

namespace strata::cli {

void add_disagg_flags(CLI::App* app, DisaggFlags* f) {
  app->add_option("--role", f->role,
                  "Disaggregated serving: prefill (computes prompts, publishes their KV) | "
                  "decode (generates; prefills on --prefill-peer workers when that is faster) | "
                  "both")
      ->capture_default_str()
      ->check(CLI::IsMember({"both", "prefill", "decode"}));
  app->add_option("--kv-transfer-host", f->options.transfer.host,
                  "--role prefill (or a decode worker with --kv-transfer-port): address of the KV "
                  "transfer channel")
      ->capture_default_str();
  app->add_option("--kv-transfer-port", f->options.transfer.port,
                  "--role prefill: port of the KV transfer channel; 0 = any free port. "
                  "--role decode: serve this worker's KV there too, so its running requests "
                  "can migrate when it is drained (POST /strata/v1/drain)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535))
      ->each([f](const std::string&) { f->options.decode_serves_kv = true; });
  app->add_option("--prefill-peer", f->options.remote.peers,
                  "--role decode: a prefill worker's KV transfer channel, HOST:PORT (repeatable)");
  app->add_option("--remote-prefill", f->remote_prefill,
                  "--role decode: auto (remote when computing here would take longer than the "
                  "prefill pool's queue plus the transfer, from measured rates) | always | never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app->add_option("--kv-transfer-min-deadline", f->options.remote.min_deadline_s,
                  "--role decode: seconds a remote prefill may take at least (the deadline is "
                  "3x its expected time from measured rates, never less than this)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
}

Result<disagg::WorkerRoleOptions> to_worker_role_options(const DisaggFlags& f) {
  disagg::WorkerRoleOptions o = f.options;
  std::optional<disagg::WorkerRole> role = disagg::parse_worker_role(f.role);
  if (!role) return invalid_argument("--role: '" + f.role + "' (expected prefill, decode or both)");
  o.role = *role;
  std::optional<disagg::RemotePrefillPolicy> policy =
      disagg::parse_remote_prefill_policy(f.remote_prefill);
  if (!policy) {
    return invalid_argument("--remote-prefill: '" + f.remote_prefill +
                            "' (expected auto, always or never)");
  }
  o.remote.policy = *policy;
  return o;
}

}  // namespace strata::cli
