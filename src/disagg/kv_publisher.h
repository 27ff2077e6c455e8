// KvPublisher: a prefill worker's KvConnector. It loads nothing; after each
// engine step it hands every chunk a subscriber waits for, named by chunk
// key, to that subscriber the moment the chunk's KV is complete (so a
// transfer overlaps the rest of the prompt's prefill). A chunk the pool
// already held (a prefix hit on the prefill side) is published by the
// first step of the request that reads it.
//
// Nothing is leased: the payload is a copy, made on the engine thread
// between steps, and the pool's blocks stay the engine's (its prefix
// cache keeps or evicts them as any other).
//
// subscribe()/unsubscribe() are thread-safe (the transfer server's I/O
// thread); the KvConnector calls run on the engine thread. Sinks run on the
// engine thread and must not block (they post to the I/O thread).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/kv_connector.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_chunk.h"

namespace strata::disagg {

class KvPublisher final : public KvConnector {
 public:
  using Sink = std::function<void(int32_t chunk_index, KvChunkHandle chunk)>;

  KvPublisher(const ModelFingerprint& fingerprint, int32_t block_size, int32_t chunk_tokens);

  // Waits for the chunks `keys` (chunk indexes first_chunk, first_chunk + 1,
  // ...); each is handed to `sink` once. Returns the subscription's id.
  uint64_t subscribe(std::vector<ChunkKey> keys, int32_t first_chunk, Sink sink);
  void unsubscribe(uint64_t id);

  const ModelFingerprint& fingerprint() const { return fingerprint_; }
  int32_t chunk_tokens() const { return chunk_tokens_; }
  int32_t block_size() const { return block_size_; }

  void set_wakeup(std::function<void()>) override {}
  int64_t start_load(const KvLoadQuery&) override { return 0; }
  void cancel_load(uint64_t) override {}
  std::vector<KvLoadReady> poll_loads() override { return {}; }
  int64_t load_blocks(uint64_t, int64_t, std::span<const int32_t>, KvStorage&) override {
    return 0;
  }
  void save(const KvSaveRequest& request, KvStorage& storage) override;
  void request_finished(RequestId request_id) override { num_checked_chunks_.erase(request_id); }
  void flush() override {}

 private:
  struct Waiter {
    uint64_t subscription = 0;
    int32_t chunk_index = 0;
  };

  ModelFingerprint fingerprint_;
  int32_t block_size_;
  int32_t chunk_tokens_;
  int32_t blocks_per_chunk_;

  std::mutex mu_;  // guards the two maps below and next_id_
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Sink> sinks_;
  std::unordered_map<ChunkKey, std::vector<Waiter>, ChunkKeyHash> waiters_;
  // Engine thread only: chunks [0, n) of a request were looked up already.
  std::unordered_map<RequestId, int64_t> num_checked_chunks_;
};

}  // namespace strata::disagg
