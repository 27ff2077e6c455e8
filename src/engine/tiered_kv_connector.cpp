#include "engine/tiered_kv_connector.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "engine/kv_slice_message.h"
#include "kvtier/chunk_io.h"
#include "kvtier/chunk_run.h"
#include "parallel/process_group.h"

namespace strata {
namespace {

// The tiers' own counters, as Metrics exports them.
std::vector<TierMetricsSnapshot> tier_metrics(const KvTierManager& tiers) {
  std::vector<TierMetricsSnapshot> out;
  for (size_t i = 0; i < tiers.num_tiers(); ++i) {
    const TierStats st = tiers.tier_stats(i);
    TierMetricsSnapshot m;
    m.tier = std::string(tiers.tier_name(i));
    m.hits = st.hits;
    m.misses = st.misses;
    m.bytes_read = st.bytes_read;
    m.bytes_written = st.bytes_written;
    m.evictions = st.evictions;
    m.errors = st.errors;
    m.dropped_stores = st.dropped_stores;
    m.stored_chunks = st.stored_chunks;
    m.stored_bytes = st.stored_bytes;
    for (auto [dst, src] :
         {std::pair{&m.get_latency, &st.get_latency}, std::pair{&m.put_latency, &st.put_latency}}) {
      dst->bounds = src->bounds;
      dst->counts = src->counts;
      dst->sum = src->sum;
      dst->count = src->count;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

KvTierOptions slice_tier_options(const KvTierOptions& options, const ParallelLayout& layout) {
  KvTierOptions out = options;
  if (layout.is_parallel() && !out.disk_dir.empty()) out.disk_dir += "/" + layout.key();
  return out;
}

Result<std::unique_ptr<TieredKvConnector>> TieredKvConnector::create(
    const ModelWeights& weights, int32_t block_size, const KvTierOptions& options,
    std::unique_ptr<KvTierManager> tiers, Metrics* metrics, const Clock* clock) {
  STRATA_RETURN_IF_ERROR(options.validate(block_size));
  const ModelConfig& config = weights.config();
  // A rank's chunk holds its slice: its KV heads, its layers.
  const size_t payload_bytes =
      static_cast<size_t>(options.chunk_tokens) * kv_bytes_per_token(weights.local_config());
  if (tiers == nullptr) {
    STRATA_ASSIGN_OR_RETURN(
        tiers, KvTierManager::create(slice_tier_options(options, weights.layout()), payload_bytes));
  }
  // Every rank's fingerprint is the whole model's; the key adds the layout.
  const ModelFingerprint fingerprint =
      compute_model_fingerprint(weights.file(), config, block_size, options.chunk_tokens);
  std::unique_ptr<TieredKvConnector> c(new TieredKvConnector(std::move(tiers), fingerprint,
                                                             block_size, options.chunk_tokens,
                                                             payload_bytes, metrics, clock));
  if (ProcessGroup* group = weights.group(); group != nullptr && group->size() > 1) {
    c->group_ = group;
    c->layout_ = weights.layout();
    KvSliceMessage open;
    open.op = KvSliceOp::kOpen;
    open.block_size = block_size;
    open.options = options;
    c->tell_workers(open);
  }
  if (metrics != nullptr) {
    KvTierManager* t = c->tiers_.get();
    metrics->set_tier_source([t] { return tier_metrics(*t); });
  }
  return c;
}

TieredKvConnector::TieredKvConnector(std::unique_ptr<KvTierManager> tiers,
                                     const ModelFingerprint& fingerprint, int32_t block_size,
                                     int32_t chunk_tokens, size_t chunk_payload_bytes,
                                     Metrics* metrics, const Clock* clock)
    : tiers_(std::move(tiers)),
      fingerprint_(fingerprint),
      block_size_(block_size),
      chunk_tokens_(chunk_tokens),
      blocks_per_chunk_(chunk_tokens / block_size),
      chunk_payload_bytes_(chunk_payload_bytes),
      metrics_(metrics),
      clock_(clock != nullptr ? clock : &steady_clock_) {
  loader_ = std::make_unique<KvLoader>(*tiers_, [this] {
    if (wakeup_) wakeup_();
  });
}

TieredKvConnector::~TieredKvConnector() {
  if (group_ != nullptr) {
    KvSliceMessage close;
    close.op = KvSliceOp::kClose;
    tell_workers(close);
  }
  if (metrics_ != nullptr) metrics_->set_tier_source(nullptr);
  loader_.reset();  // borrows tiers_
  tiers_->flush();
}

ChunkKey TieredKvConnector::chunk_key(std::span<const BlockHash> block_hashes,
                                      int64_t chunk) const {
  return make_chunk_key(fingerprint_, block_hashes[(chunk + 1) * blocks_per_chunk_ - 1], layout_);
}

bool TieredKvConnector::tell_workers(const KvSliceMessage& m) {
  if (group_->is_failing()) return false;
  try {
    group_->broadcast_control(ControlKind::kKvTier, encode_kv_slice_message(m));
    return true;
  } catch (const GroupFailure&) {
    return false;
  }
}

int64_t TieredKvConnector::min_over_workers(int64_t own, const char* what) {
  int64_t n = own;
  try {
    for (int r = 1; r < group_->size(); ++r) {
      int64_t theirs = 0;
      group_->recv(r, &theirs, sizeof(theirs), what);
      n = std::min(n, theirs);
    }
  } catch (const GroupFailure&) {
    return 0;
  }
  return n;
}

int64_t TieredKvConnector::start_load(const KvLoadQuery& q) {
  const int64_t num_prompt = static_cast<int64_t>(q.prompt_tokens.size());
  // Never the last prompt token: its logits are needed (as find_prefix).
  const int64_t max_chunks =
      std::min<int64_t>((num_prompt - 1) / chunk_tokens_,
                        static_cast<int64_t>(q.block_hashes.size()) / blocks_per_chunk_);
  const int64_t first_chunk = q.num_pool_tokens / chunk_tokens_;
  if (first_chunk >= max_chunks) return 0;
  Load load;
  load.first_chunk = first_chunk;
  for (int64_t k = first_chunk; k < max_chunks; ++k)
    load.keys.push_back(chunk_key(q.block_hashes, k));
  // A RAM-only cache answers at once: skip the loader round trip on a miss.
  if (tiers_->num_tiers() == 1 && tiers_->tier(0).is_memory() &&
      !tiers_->memory_contains(load.keys[0])) {
    return 0;
  }
  if (group_ != nullptr) {
    KvSliceMessage m;
    m.op = KvSliceOp::kLoad;
    m.load_id = q.load_id;
    m.first_chunk = first_chunk;
    for (int64_t k = first_chunk; k < max_chunks; ++k)
      m.hashes.push_back(q.block_hashes[(k + 1) * blocks_per_chunk_ - 1]);
    if (!tell_workers(m)) return 0;
  }
  load.start_ns = clock_->now_ns();
  loader_->submit(KvLoader::Job{q.load_id, load.keys});
  loads_[q.load_id] = std::move(load);
  return max_chunks * chunk_tokens_ - q.num_pool_tokens;
}

void TieredKvConnector::cancel_load(uint64_t load_id) {
  loader_->cancel(load_id);
  if (loads_.erase(load_id) > 0 && group_ != nullptr) {
    KvSliceMessage m;
    m.op = KvSliceOp::kCancel;
    m.load_id = load_id;
    tell_workers(m);
  }
}

std::vector<KvLoadReady> TieredKvConnector::poll_loads() {
  std::vector<KvLoadReady> ready;
  const int64_t now = clock_->now_ns();
  for (KvLoader::Done& d : loader_->take_done()) {
    auto it = loads_.find(d.id);
    if (it == loads_.end()) continue;  // cancelled while loading
    Load& load = it->second;
    if (metrics_ != nullptr) {
      metrics_->observe_kv_load_time(static_cast<double>(now - load.start_ns) * 1e-9);
    }
    // The usable run: well-formed chunks with the keys asked for.
    size_t num_ok = 0;
    while (num_ok < d.loaded.chunks.size() && num_ok < load.keys.size() &&
           num_ok < d.loaded.tier_index.size()) {
      const KvChunkHandle& c = d.loaded.chunks[num_ok];
      if (!c || c->key != load.keys[num_ok] || c->num_tokens != chunk_tokens_ ||
          c->payload.size() != chunk_payload_bytes_) {
        break;
      }
      ++num_ok;
    }
    d.loaded.chunks.resize(num_ok);
    d.loaded.tier_index.resize(num_ok);
    load.found = std::move(d.loaded);
    const int64_t num_tokens =
        num_ok == 0 ? 0 : (load.first_chunk + static_cast<int64_t>(num_ok)) * chunk_tokens_;
    ready.push_back({d.id, num_tokens});
  }
  return ready;
}

int64_t TieredKvConnector::load_blocks(uint64_t load_id, int64_t first_block,
                                       std::span<const int32_t> block_ids, KvStorage& storage) {
  auto it = loads_.find(load_id);
  if (it == loads_.end()) return 0;
  const Load load = std::move(it->second);
  loads_.erase(it);
  bool workers_told = false;
  if (group_ != nullptr) {
    // Every rank writes its slice into the same blocks (in order with the
    // steps: before any step reads them), then answers how many it wrote.
    KvSliceMessage m;
    m.op = KvSliceOp::kWrite;
    m.load_id = load_id;
    m.first_block = first_block;
    m.block_ids.assign(block_ids.begin(), block_ids.end());
    workers_told = tell_workers(m);
    if (!workers_told) return 0;
  }
  std::vector<int64_t> written;  // per chunk of the run: requested blocks it wrote
  const ChunkRunWrite w =
      write_chunk_run(storage, load.found.chunks, load.first_chunk, blocks_per_chunk_, first_block,
                      block_ids, [&](size_t j, int64_t n) {
                        written.resize(std::max(written.size(), j + 1), 0);
                        written[j] = n;
                      });
  if (!w.status) {
    std::fprintf(stderr, "[kv] chunk %s not loaded: %s\n", load.keys[w.failed_chunk].hex().c_str(),
                 w.status.message().c_str());
  }
  // Only the blocks that every rank holds its slice of are usable.
  const int64_t num_blocks =
      workers_told ? min_over_workers(w.num_blocks, "the KV tier load") : w.num_blocks;
  if (metrics_ != nullptr) {
    int64_t left = num_blocks;
    for (size_t j = 0; j < written.size() && left > 0; ++j) {
      const int64_t n = std::min(written[j], left);
      left -= n;
      metrics_->add_prompt_tokens_cached(
          std::string(tiers_->tier_name(static_cast<size_t>(load.found.tier_index[j]))),
          n * block_size_);
    }
  }
  return num_blocks;
}

std::vector<KvSourceProbe> TieredKvConnector::probe(std::span<const BlockHash> block_hashes) {
  // Chunk keys depend only on the fingerprint and the hashes: no engine state.
  std::vector<ChunkKey> keys;
  for (int64_t k = 0; (k + 1) * blocks_per_chunk_ <= static_cast<int64_t>(block_hashes.size());
       ++k) {
    keys.push_back(chunk_key(block_hashes, k));
  }
  std::vector<KvSourceProbe> out;
  for (size_t i = 0; i < tiers_->num_tiers(); ++i) {
    KvSourceProbe p;
    p.name = std::string(tiers_->tier_name(i));
    p.is_available = tiers_->is_tier_available(i);
    if (p.is_available) {
      size_t n = 0;
      while (n < keys.size() && tiers_->tier(i).contains(keys[n])) ++n;
      p.num_tokens = static_cast<int64_t>(n) * chunk_tokens_;
    }
    out.push_back(std::move(p));
  }
  return out;
}

void TieredKvConnector::save(const KvSaveRequest& r, KvStorage& storage) {
  int64_t& num_saved = num_saved_chunks_[r.request_id];
  // Chunks inside the admission's prefix hit came from the pool or a tier:
  // whoever computed them stored them.
  if (r.is_first_step) num_saved = std::max(num_saved, r.num_cached_tokens / chunk_tokens_);
  const int64_t num_chunks =
      std::min<int64_t>(r.num_computed_tokens / chunk_tokens_,
                        static_cast<int64_t>(r.block_hashes.size()) / blocks_per_chunk_);
  KvSliceMessage workers;  // the same chunks, for the other ranks' slices
  workers.op = KvSliceOp::kSave;
  for (int64_t k = num_saved; k < num_chunks; ++k) {
    const std::span<const int32_t> blocks = r.block_table.subspan(
        static_cast<size_t>(k * blocks_per_chunk_), static_cast<size_t>(blocks_per_chunk_));
    if (group_ != nullptr) {
      workers.hashes.push_back(r.block_hashes[(k + 1) * blocks_per_chunk_ - 1]);
      workers.block_ids.insert(workers.block_ids.end(), blocks.begin(), blocks.end());
    }
    const ChunkKey key = chunk_key(r.block_hashes, k);
    if (tiers_->memory_contains(key)) continue;
    auto chunk = std::make_shared<KvChunk>();
    chunk->key = key;
    chunk->num_tokens = chunk_tokens_;
    chunk->payload = gather_chunk_payload(storage, blocks);
    tiers_->put_async(std::move(chunk));
  }
  if (!workers.hashes.empty()) tell_workers(workers);
  num_saved = std::max(num_saved, num_chunks);
}

void TieredKvConnector::flush() {
  tiers_->flush();
  if (group_ == nullptr) return;
  KvSliceMessage m;
  m.op = KvSliceOp::kFlush;
  if (tell_workers(m)) min_over_workers(1, "the KV tier flush");
}

}  // namespace strata
