#include "disagg/worker_role.h"

#include <utility>

#include "disagg/decode_connector.h"
#include "disagg/kv_publisher.h"

namespace strata::disagg {

std::optional<WorkerRole> parse_worker_role(std::string_view name) {
  if (name == "both") return WorkerRole::kBoth;
  if (name == "prefill") return WorkerRole::kPrefill;
  if (name == "decode") return WorkerRole::kDecode;
  return std::nullopt;
}

const char* worker_role_name(WorkerRole role) {
  switch (role) {
    case WorkerRole::kBoth:
      return "both";
    case WorkerRole::kPrefill:
      return "prefill";
    case WorkerRole::kDecode:
      return "decode";
  }
  return "both";
}

Result<std::unique_ptr<WorkerRoleSetup>> WorkerRoleSetup::create(
    const ModelWeights& weights, const EngineOptions& engine_options, WorkerRoleOptions options) {
  if (options.role != WorkerRole::kBoth) {
    if (engine_options.kv_tiers.enabled()) {
      return invalid_argument("--role " + std::string(worker_role_name(options.role)) +
                              " does not combine with the KV tiers (--kv-cpu-bytes, "
                              "--kv-disk-dir, --kv-remote) yet");
    }
    if (!engine_options.enable_prefix_caching) {
      return invalid_argument("--role " + std::string(worker_role_name(options.role)) +
                              " needs prefix caching (transferred KV joins the prefix cache)");
    }
    const int32_t chunk = engine_options.kv_tiers.chunk_tokens;
    if (chunk <= 0 || chunk % engine_options.block_size != 0) {
      return invalid_argument("--kv-chunk-tokens must be a positive multiple of --block-size");
    }
  }
  if (options.role == WorkerRole::kDecode && options.remote.peers.empty() &&
      !options.decode_serves_kv) {
    return invalid_argument(
        "--role decode needs --prefill-peer HOST:PORT (repeatable) or --kv-transfer-port "
        "(a migration-only decode worker)");
  }
  if (options.role != WorkerRole::kDecode) options.decode_serves_kv = false;
  options.remote.allow_no_peers = options.decode_serves_kv;
  if (options.role != WorkerRole::kDecode && !options.remote.peers.empty()) {
    return invalid_argument("--prefill-peer is for --role decode");
  }
  options.remote.chunk_tokens = engine_options.kv_tiers.chunk_tokens;
  return std::unique_ptr<WorkerRoleSetup>(
      new WorkerRoleSetup(weights, engine_options, std::move(options)));
}

WorkerRoleSetup::WorkerRoleSetup(const ModelWeights& weights, const EngineOptions& engine_options,
                                 WorkerRoleOptions options)
    : weights_(weights), engine_options_(engine_options), options_(std::move(options)) {}

WorkerRoleSetup::~WorkerRoleSetup() {
  stop();
}

KvConnectorFactory WorkerRoleSetup::connector_factory() {
  switch (options_.role) {
    case WorkerRole::kBoth:
      return {};
    case WorkerRole::kPrefill:
      return [this](Metrics&, const Clock&) -> Result<std::unique_ptr<KvConnector>> {
        const int32_t chunk = engine_options_.kv_tiers.chunk_tokens;
        const ModelFingerprint fp = compute_model_fingerprint(weights_.file(), weights_.config(),
                                                              engine_options_.block_size, chunk);
        auto p = std::make_unique<KvPublisher>(fp, engine_options_.block_size, chunk);
        publisher_ = p.get();
        return std::unique_ptr<KvConnector>(std::move(p));
      };
    case WorkerRole::kDecode:
      return [this](Metrics& m, const Clock&) -> Result<std::unique_ptr<KvConnector>> {
        STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RemotePrefillConnector> c,
                                RemotePrefillConnector::create(weights_, engine_options_.block_size,
                                                               options_.remote, &m, &metrics_));
        if (!options_.decode_serves_kv) return std::unique_ptr<KvConnector>(std::move(c));
        const int32_t chunk = engine_options_.kv_tiers.chunk_tokens;
        const ModelFingerprint fp = compute_model_fingerprint(weights_.file(), weights_.config(),
                                                              engine_options_.block_size, chunk);
        auto p = std::make_unique<KvPublisher>(fp, engine_options_.block_size, chunk);
        publisher_ = p.get();
        return std::unique_ptr<KvConnector>(
            std::make_unique<DecodeConnector>(std::move(c), std::move(p)));
      };
  }
  return {};
}

Status WorkerRoleSetup::start(Engine& engine) {
  const bool serves = options_.role == WorkerRole::kPrefill ||
                      (options_.role == WorkerRole::kDecode && options_.decode_serves_kv);
  if (!serves) return Status::ok();
  if (publisher_ == nullptr) return Status(StatusCode::kInternal, "worker role: no publisher");
  STRATA_ASSIGN_OR_RETURN(
      server_, KvTransferServer::start(engine, *publisher_, &metrics_, options_.transfer));
  return Status::ok();
}

std::string WorkerRoleSetup::transfer_address() const {
  if (!server_) return {};
  const std::string& host = options_.transfer.host;
  const bool is_v6 = host.find(':') != std::string::npos;
  return (is_v6 ? "[" + host + "]" : host) + ":" + std::to_string(server_->port());
}

void WorkerRoleSetup::stop() {
  server_.reset();
}

std::string WorkerRoleSetup::metrics_text(const std::string& model_name) const {
  if (options_.role == WorkerRole::kBoth) return {};
  return metrics_.to_prometheus_text(model_name);
}

}  // namespace strata::disagg
