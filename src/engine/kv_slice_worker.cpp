#include "engine/kv_slice_worker.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/tiered_kv_connector.h"
#include "kvtier/chunk_io.h"
#include "kvtier/chunk_run.h"
#include "parallel/process_group.h"

namespace strata {

struct KvSliceWorker::Tiers {
  ModelFingerprint fingerprint;
  ParallelLayout layout;
  int32_t chunk_tokens = 0;
  int32_t blocks_per_chunk = 0;
  size_t payload_bytes = 0;
  double max_wait_s = 0.0;                 // a lookup rank 0 waits on
  std::unique_ptr<KvTierManager> manager;  // null: this rank's tiers did not open
  std::unique_ptr<KvLoader> loader;        // borrows manager; destroyed first
  struct Load {
    int64_t first_chunk = 0;
    std::vector<ChunkKey> keys;
  };
  std::unordered_map<uint64_t, Load> loads;
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<uint64_t, KvTierManager::Loaded> done;  // guarded by mu

  ~Tiers() {
    loader.reset();
    if (manager) manager->flush();
  }
  ChunkKey key(const BlockHash& last_block_hash) const {
    return make_chunk_key(fingerprint, last_block_hash, layout);
  }
  // Collects the loader's finished jobs (the loader thread only notifies;
  // this runs on the worker loop's thread, which alone touches `loads`).
  // A job cancelled while it ran is dropped here, with its chunks.
  void collect_locked() {
    for (KvLoader::Done& d : loader->take_done()) {
      if (loads.count(d.id)) done[d.id] = std::move(d.loaded);
    }
  }
};

KvSliceWorker::KvSliceWorker(const ModelWeights& weights) : weights_(weights) {}
KvSliceWorker::~KvSliceWorker() = default;

void KvSliceWorker::handle(std::span<const uint8_t> payload, KvStorage& storage) {
  ProcessGroup& group = *weights_.group();
  Result<KvSliceMessage> m = decode_kv_slice_message(payload);
  if (!m) group.fail("a KV tier message from rank 0 does not decode: " + m.status().message());
  switch (m->op) {
    case KvSliceOp::kOpen:
      open(*m);
      return;
    case KvSliceOp::kClose:
      tiers_.reset();
      return;
    case KvSliceOp::kFlush: {
      if (tiers_ && tiers_->manager) tiers_->manager->flush();
      const int64_t done = 1;
      group.send(0, &done, sizeof(done), "the KV tier flush");
      return;
    }
    case KvSliceOp::kWrite: {
      const int64_t n = write(*m, storage);
      group.send(0, &n, sizeof(n), "the KV tier load");
      return;
    }
    default:
      break;
  }
  if (!tiers_) group.fail("rank 0 sent a KV tier message before opening the tiers");
  Tiers& t = *tiers_;
  if (m->op == KvSliceOp::kLoad) {
    if (!t.manager) return;
    Tiers::Load load{m->first_chunk, {}};
    for (const BlockHash& h : m->hashes) load.keys.push_back(t.key(h));
    t.loader->submit(KvLoader::Job{m->load_id, load.keys});
    t.loads[m->load_id] = std::move(load);
  } else if (m->op == KvSliceOp::kCancel) {
    if (!t.manager) return;
    t.loader->cancel(m->load_id);
    t.loads.erase(m->load_id);
    std::lock_guard<std::mutex> lock(t.mu);
    t.collect_locked();  // drops it if it finished; a result still to come is dropped then
    t.done.erase(m->load_id);
  } else if (m->op == KvSliceOp::kSave) {
    save(*m, storage);
  }
}

void KvSliceWorker::open(const KvSliceMessage& m) {
  tiers_.reset();
  auto t = std::make_unique<Tiers>();
  t->layout = weights_.layout();
  t->chunk_tokens = m.options.chunk_tokens;
  t->blocks_per_chunk = m.block_size > 0 ? m.options.chunk_tokens / m.block_size : 0;
  t->payload_bytes =
      static_cast<size_t>(m.options.chunk_tokens) * kv_bytes_per_token(weights_.local_config());
  t->max_wait_s = weights_.group()->options().collective_timeout_s / 2;
  t->fingerprint = compute_model_fingerprint(weights_.file(), weights_.config(), m.block_size,
                                             m.options.chunk_tokens);
  Status s = m.options.validate(m.block_size);
  if (s) {
    Result<std::unique_ptr<KvTierManager>> manager =
        KvTierManager::create(slice_tier_options(m.options, t->layout), t->payload_bytes);
    if (manager) {
      t->manager = std::move(*manager);
    } else {
      s = manager.status();
    }
  }
  if (!s) {
    // This rank then holds no slice: every load it is asked for finds
    // nothing, so every rank computes those blocks.
    std::fprintf(stderr, "[kv] rank %d: no KV tiers (%s); its slices are computed\n",
                 t->layout.rank, s.message().c_str());
  } else {
    Tiers* raw = t.get();
    t->loader = std::make_unique<KvLoader>(*t->manager, [raw] {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->cv.notify_all();
    });
  }
  tiers_ = std::move(t);
}

int64_t KvSliceWorker::write(const KvSliceMessage& m, KvStorage& storage) {
  if (!tiers_ || !tiers_->manager) return 0;
  Tiers& t = *tiers_;
  auto it = t.loads.find(m.load_id);
  if (it == t.loads.end()) return 0;
  const Tiers::Load load = it->second;  // erased once its lookup is collected
  // The lookup runs on the loader thread; it is bounded by the tiers' own
  // timeouts, this wait by half the exchange deadline rank 0 waits with.
  KvTierManager::Loaded found;
  {
    std::unique_lock<std::mutex> lock(t.mu);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(t.max_wait_s));
    for (;;) {
      t.collect_locked();
      if (auto d = t.done.find(m.load_id); d != t.done.end()) {
        found = std::move(d->second);
        t.done.erase(d);
        break;
      }
      if (t.cv.wait_until(lock, deadline) == std::cv_status::timeout) {
        t.collect_locked();
        if (!t.done.count(m.load_id)) {
          t.loader->cancel(m.load_id);
          t.loads.erase(m.load_id);  // a late result is dropped
          return 0;
        }
      }
    }
  }
  t.loads.erase(m.load_id);
  // The usable run: well-formed chunks with the keys asked for.
  size_t num_ok = 0;
  while (num_ok < found.chunks.size() && num_ok < load.keys.size()) {
    const KvChunkHandle& c = found.chunks[num_ok];
    if (!c || c->key != load.keys[num_ok] || c->num_tokens != t.chunk_tokens ||
        c->payload.size() != t.payload_bytes) {
      break;
    }
    ++num_ok;
  }
  found.chunks.resize(num_ok);
  const ChunkRunWrite w = write_chunk_run(storage, found.chunks, load.first_chunk,
                                          t.blocks_per_chunk, m.first_block, m.block_ids);
  if (!w.status) {
    std::fprintf(stderr, "[kv] rank %d: chunk %s not loaded: %s\n", t.layout.rank,
                 load.keys[w.failed_chunk].hex().c_str(), w.status.message().c_str());
  }
  return w.num_blocks;
}

void KvSliceWorker::save(const KvSliceMessage& m, KvStorage& storage) {
  Tiers& t = *tiers_;
  if (!t.manager || t.blocks_per_chunk <= 0) return;
  const size_t bpc = static_cast<size_t>(t.blocks_per_chunk);
  if (m.block_ids.size() != m.hashes.size() * bpc) {
    weights_.group()->fail("a KV tier save from rank 0 names the wrong number of blocks");
  }
  const std::span<const int32_t> ids(m.block_ids);
  for (size_t i = 0; i < m.hashes.size(); ++i) {
    const std::span<const int32_t> blocks = ids.subspan(i * bpc, bpc);
    for (int32_t b : blocks) {
      if (b < 0 || b >= storage.num_blocks()) {
        weights_.group()->fail("a KV tier save from rank 0 names block " + std::to_string(b) +
                               ", out of this rank's pool");
      }
    }
    const ChunkKey key = t.key(m.hashes[i]);
    if (t.manager->memory_contains(key)) continue;
    auto chunk = std::make_shared<KvChunk>();
    chunk->key = key;
    chunk->num_tokens = t.chunk_tokens;
    chunk->payload = gather_chunk_payload(storage, blocks);
    t.manager->put_async(std::move(chunk));
  }
}

}  // namespace strata
