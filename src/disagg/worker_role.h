// WorkerRole: what `strata serve --role prefill|decode|both` sets up around
// the engine (docs/disagg.md).
//   both     a colocated server (nothing here);
//   prefill  the engine's connector is a KvPublisher, and a KvTransferServer
//            listens on --kv-transfer-host:--kv-transfer-port for decode
//            workers' asks;
//   decode   the engine's connector is a RemotePrefillConnector over the
//            --prefill-peer channels; with --kv-transfer-port also a
//            KvPublisher and a KvTransferServer (DecodeConnector), so its
//            running requests can migrate (docs/disagg.md "Migration").
// Either way the worker still serves the whole OpenAI API: a prefill worker
// can generate, a decode worker prefills locally whenever that is cheaper.
//
// Lifecycle: create() (checks the flags before the model work), pass
// connector_factory() to Engine::create, start(engine) once the HTTP server
// is bound, stop() before the engine goes. Owns the DisaggMetrics (so it
// must outlive the engine whose connector reports into them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "disagg/disagg_metrics.h"
#include "disagg/kv_transfer_server.h"
#include "disagg/remote_prefill_connector.h"
#include "engine/engine.h"
#include "engine/engine_options.h"
#include "model/model_weights.h"
#include "util/status.h"

namespace strata::disagg {

enum class WorkerRole { kBoth, kPrefill, kDecode };
std::optional<WorkerRole> parse_worker_role(std::string_view name);
const char* worker_role_name(WorkerRole role);

struct WorkerRoleOptions {
  WorkerRole role = WorkerRole::kBoth;
  KvTransferServerOptions transfer;  // prefill
  RemotePrefillOptions remote;       // decode (chunk_tokens is filled from the engine options)
  // Decode: also run the KV transfer server (--kv-transfer-port given), so
  // this worker's running requests can migrate to another decode worker
  // (their KV is pulled from here by content). A decode worker that serves
  // its KV needs no --prefill-peer: it can still receive migrated requests.
  bool decode_serves_kv = false;
};

class WorkerRoleSetup {
 public:
  static Result<std::unique_ptr<WorkerRoleSetup>> create(const ModelWeights& weights,
                                                         const EngineOptions& engine_options,
                                                         WorkerRoleOptions options);
  ~WorkerRoleSetup();

  WorkerRole role() const { return options_.role; }
  // Null for --role both.
  KvConnectorFactory connector_factory();
  // Prefill: starts the transfer server (its port is then transfer_port()).
  Status start(Engine& engine);
  void stop();
  uint16_t transfer_port() const { return server_ ? server_->port() : 0; }
  // HOST:PORT of this worker's KV transfer channel; empty when it has none.
  std::string transfer_address() const;
  // Whether this worker's requests can migrate (it serves their KV).
  bool can_migrate() const { return server_ != nullptr && options_.role == WorkerRole::kDecode; }
  DisaggMetrics& mutable_metrics() { return metrics_; }
  // Empty for --role both.
  std::string metrics_text(const std::string& model_name) const;
  const DisaggMetrics& metrics() const { return metrics_; }

 private:
  WorkerRoleSetup(const ModelWeights& weights, const EngineOptions& engine_options,
                  WorkerRoleOptions options);

  const ModelWeights& weights_;
  EngineOptions engine_options_;
  WorkerRoleOptions options_;
  DisaggMetrics metrics_;
  KvPublisher* publisher_ = nullptr;  // owned by the engine's core
  std::unique_ptr<KvTransferServer> server_;
};

}  // namespace strata::disagg
