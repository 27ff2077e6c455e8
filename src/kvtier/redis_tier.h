// RedisTier: the remote tier, one Redis server shared by replicas (hiredis).
//
// Keys are "strata:kv:v1:" + key hex; values are chunk_codec bytes (same
// header and checksums as disk). put is SET (idempotent: two replicas may
// store the same key; a chunk's bytes depend only on its key). Each operation
// runs under a timeout (connect and command, timeout_ms); on any error the
// connection is dropped (a late reply must never be read as the answer to a
// later command) and the next operation reconnects, sending AUTH first when a
// password is set. Replies are parsed defensively: type checked, size bounded
// by kChunkHeaderBytes + max_payload_bytes before decoding.
//
// connect() fails only for a malformed URL: an unreachable server is not
// fatal (operations fail as faults and the manager backs off and retries).
// Scaling past one machine is Redis Cluster's job (docs/kv_tiers.md); this
// tier speaks to one endpoint.
//
// Thread-safety: thread-safe; one connection, operations serialized by a
// mutex (each bounded by the timeout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kvtier/kv_tier.h"

struct redisContext;
struct redisReply;

namespace strata {

class RedisTier final : public KvTier {
 public:
  // url: "redis://host:port" (port defaults to 6379).
  static Result<std::unique_ptr<RedisTier>> connect(const std::string& url,
                                                    const std::string& password, int32_t timeout_ms,
                                                    size_t max_payload_bytes);
  ~RedisTier() override;

  std::string_view name() const override { return "redis"; }
  bool contains(const ChunkKey& key) override;
  Status put(const KvChunkHandle& chunk) override;
  Result<KvChunkHandle> get(const ChunkKey& key) override;
  Status remove(const ChunkKey& key) override;
  TierStats stats() const override;
  Status ping() override;  // PING (connecting first if needed)

  static std::string redis_key(const ChunkKey& key);  // "strata:kv:v1:" + hex
  bool is_connected() const;

 private:
  RedisTier(std::string host, int port, std::string password, int32_t timeout_ms,
            size_t max_payload_bytes);
  struct ReplyDeleter {
    void operator()(redisReply* r) const;
  };
  using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

  Status ensure_connected_locked();
  void disconnect_locked();
  // Runs one command (binary-safe arguments). A transport error or an error
  // reply drops the connection (its state is unknown), counts an error and
  // returns a fault.
  Result<ReplyPtr> command_locked(std::initializer_list<std::string_view> args);
  // An unexpected reply type: drops the connection, counts an error.
  Status protocol_error_locked(std::string_view command);

  const std::string host_;
  const int port_;
  const std::string password_;
  const int32_t timeout_ms_;
  const size_t max_payload_bytes_;

  mutable std::mutex mu_;
  redisContext* ctx_ = nullptr;
  TierStatsRecorder recorder_;
};

}  // namespace strata
