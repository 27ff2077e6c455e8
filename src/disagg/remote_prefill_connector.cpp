#include "disagg/remote_prefill_connector.h"

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "disagg/kv_transfer_protocol.h"
#include "kvtier/chunk_codec.h"
#include "kvtier/chunk_io.h"
#include "kvtier/chunk_run.h"

namespace strata::disagg {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

namespace {

double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// Exponentially weighted: recent transfers count most, one outlier little.
double ewma(double old_value, double sample) {
  return old_value <= 0.0 ? sample : 0.7 * old_value + 0.3 * sample;
}

}  // namespace

struct PeerState {
  std::string host;
  std::string port;
  double queue_delay_s = 0.0;
  double s_per_token = 0.0;
  double bytes_per_s = 0.0;
  double rtt_s = 0.0;
  int32_t num_in_flight = 0;
  int32_t num_failures = 0;  // consecutive
  SteadyClock::time_point backoff_until{};
  // Not a prefill peer: a migrated request's sender, asked only for the KV
  // of the requests it handed over.
  bool is_sender_only = false;
};

// What a finished transfer hands to poll_loads().
struct TransferDone {
  uint64_t load_id = 0;
  std::vector<KvChunkHandle> chunks;  // verified leading run
  std::optional<TransferFault> fault;
};

class RemotePrefillConnector::Impl {
 public:
  class Transfer;

  Impl(std::vector<PeerState> peers, DisaggMetrics* metrics)
      : peers(std::move(peers)), metrics(metrics), guard(asio::make_work_guard(io)) {
    thread = std::thread([this] { io.run(); });
  }
  ~Impl() {
    asio::post(io, [this] {
      close_all();
      guard.reset();
    });
    if (thread.joinable()) thread.join();
  }
  void close_all();
  void finish(Transfer& t, std::optional<TransferFault> fault);

  std::mutex mu;  // guards peers, done, wakeup
  std::vector<PeerState> peers;
  std::vector<TransferDone> done;
  std::function<void()> wakeup;
  DisaggMetrics* metrics;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::set<std::shared_ptr<Transfer>> transfers;                  // I/O thread only
  std::unordered_map<uint64_t, std::weak_ptr<Transfer>> by_load;  // I/O thread only
  std::thread thread;
};

class RemotePrefillConnector::Impl::Transfer : public std::enable_shared_from_this<Transfer> {
 public:
  struct Spec {
    uint64_t load_id = 0;
    size_t peer = 0;
    std::vector<uint8_t> ask;
    std::vector<ChunkKey> keys;  // expected, chunks first_chunk, ...
    int32_t first_chunk = 0;
    int32_t chunk_tokens = 0;
    size_t payload_bytes = 0;
    double deadline_s = 0.0;
    // What the deadline was derived from, to re-derive it as the transfer
    // learns more (the peer's fresh queue in its reply, each chunk's arrival).
    PrefillRates rates;
    int64_t num_tokens = 0;
    double min_deadline_s = 0.0;
  };

  Transfer(Impl& impl, Spec spec)
      : impl_(impl),
        spec_(std::move(spec)),
        socket_(impl.io),
        resolver_(impl.io),
        timer_(impl.io) {}

  void start() {
    start_ = SteadyClock::now();
    if (impl_.metrics) impl_.metrics->add_active(1);
    auto self = shared_from_this();
    arm_deadline(spec_.deadline_s);
    std::string host, port;
    {
      std::lock_guard<std::mutex> lock(impl_.mu);
      host = impl_.peers[spec_.peer].host;
      port = impl_.peers[spec_.peer].port;
    }
    resolver_.async_resolve(
        host, port, [self](boost::system::error_code ec, tcp::resolver::results_type r) {
          if (ec) return self->end(TransferFault::kUnreachable);
          asio::async_connect(self->socket_, r,
                              [self](boost::system::error_code e, const tcp::endpoint&) {
                                if (e) return self->end(TransferFault::kUnreachable);
                                self->on_connected();
                              });
        });
  }

  // The request went away (client abort): close without reporting.
  void cancel() {
    is_cancelled_ = true;
    end(std::nullopt);
  }

  // Once: closes the connection and reports (unless cancelled).
  void end(std::optional<TransferFault> fault) {
    if (is_ended_) return;
    is_ended_ = true;
    boost::system::error_code ignored;
    timer_.cancel();
    resolver_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (impl_.metrics) impl_.metrics->add_active(-1);
    impl_.finish(*this, fault);
  }

  const Spec& spec() const { return spec_; }
  std::vector<KvChunkHandle>& chunks() { return chunks_; }
  bool is_cancelled() const { return is_cancelled_; }
  double elapsed_s() const { return seconds_since(start_); }
  double rtt_s() const { return rtt_s_; }
  double payload_bytes_per_s() const {
    return payload_read_s_ > 0.0 ? static_cast<double>(payload_read_bytes_) / payload_read_s_ : 0.0;
  }
  const std::optional<KvReplyHeader>& reply() const { return reply_; }

 private:
  void on_connected() {
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    auto self = shared_from_this();
    asio::async_write(
        socket_, asio::buffer(spec_.ask), [self](boost::system::error_code ec, size_t) {
          if (ec) return self->end(TransferFault::kClosed);
          self->spec_.ask.clear();
          self->spec_.ask.shrink_to_fit();
          asio::async_read(self->socket_, asio::buffer(self->reply_bytes_),
                           [self](boost::system::error_code e, size_t) { self->on_reply(e); });
        });
  }

  // (Re)arms the deadline at `seconds` after the start.
  void arm_deadline(double seconds) {
    deadline_s_ = seconds;
    timer_.expires_at(start_ + std::chrono::duration_cast<SteadyClock::duration>(
                                   std::chrono::duration<double>(seconds)));
    auto self = shared_from_this();
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->end(TransferFault::kDeadline);
    });
  }

  // The deadline as the rates now predict the rest of the transfer, from
  // now; only ever later. A prefill worker that reports a longer queue, or
  // that keeps delivering chunks, is not stalled; one that goes silent
  // misses the deadline within a few chunks' expected time.
  void extend_deadline() {
    const int32_t num_left = static_cast<int32_t>(spec_.keys.size() - chunks_.size());
    const int64_t tokens_left =
        spec_.keys.empty() ? 0
                           : spec_.num_tokens * num_left / static_cast<int64_t>(spec_.keys.size());
    PrefillRates r = spec_.rates;
    if (!chunks_.empty()) r.peer_queue_delay_s = 0.0;  // it is computing ours
    const double rest =
        transfer_deadline_s(r, tokens_left, spec_.payload_bytes * num_left, spec_.min_deadline_s);
    if (elapsed_s() + rest > deadline_s_) arm_deadline(elapsed_s() + rest);
  }

  void on_reply(boost::system::error_code ec) {
    if (ec) return end(TransferFault::kClosed);
    rtt_s_ = elapsed_s();
    Result<KvReplyHeader> r = decode_reply_header(reply_bytes_);
    if (!r) return end(TransferFault::kCorrupt);
    reply_ = *r;
    if (r->status != KvReplyStatus::kOk) return end(TransferFault::kRefused);
    spec_.rates.peer_queue_delay_s = r->queue_delay_s;
    if (r->prefill_s_per_token > 0.0) spec_.rates.peer_s_per_token = r->prefill_s_per_token;
    extend_deadline();
    read_frame();
  }

  void read_frame() {
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(frame_bytes_),
                     [self](boost::system::error_code ec, size_t) { self->on_frame(ec); });
  }

  void on_frame(boost::system::error_code ec) {
    if (ec) return end(TransferFault::kClosed);
    const uint32_t index = decode_frame_index(frame_bytes_);
    if (index == kEndOfChunks) {
      // The prefill worker stopped short (its request failed): a fault too.
      return end(chunks_.size() == spec_.keys.size() ? std::nullopt
                                                     : std::optional(TransferFault::kClosed));
    }
    if (index != static_cast<uint32_t>(spec_.first_chunk) + chunks_.size() ||
        chunks_.size() >= spec_.keys.size()) {
      reject();
      return end(TransferFault::kCorrupt);
    }
    frame_start_ = SteadyClock::now();
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(chunk_header_),
                     [self](boost::system::error_code e, size_t) { self->on_chunk_header(e); });
  }

  void on_chunk_header(boost::system::error_code ec) {
    if (ec) return end(TransferFault::kClosed);
    Result<ChunkHeader> h = decode_chunk_header(chunk_header_, spec_.payload_bytes);
    const ChunkKey& want = spec_.keys[chunks_.size()];
    if (!h || h->key != want || h->num_tokens != spec_.chunk_tokens ||
        h->payload_bytes != spec_.payload_bytes) {
      std::fprintf(stderr, "[kv-transfer] chunk %zu rejected: %s\n",
                   static_cast<size_t>(spec_.first_chunk) + chunks_.size(),
                   !h ? h.status().message().c_str() : "key, token count or size differs");
      reject();
      return end(TransferFault::kCorrupt);
    }
    header_ = *h;
    auto chunk = std::make_shared<KvChunk>();
    chunk->key = want;
    chunk->num_tokens = spec_.chunk_tokens;
    chunk->payload.resize(spec_.payload_bytes);
    pending_ = std::move(chunk);
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(pending_->payload),
                     [self](boost::system::error_code e, size_t) { self->on_payload(e); });
  }

  void on_payload(boost::system::error_code ec) {
    if (ec) return end(TransferFault::kClosed);
    const double read_s = seconds_since(frame_start_);
    payload_read_s_ += read_s;
    payload_read_bytes_ += pending_->payload.size();
    if (impl_.metrics) impl_.metrics->add_read_seconds(read_s);
    if (Status s = verify_chunk_payload(header_, pending_->payload); !s) {
      std::fprintf(stderr, "[kv-transfer] chunk %zu rejected: %s\n",
                   static_cast<size_t>(spec_.first_chunk) + chunks_.size(), s.message().c_str());
      reject();
      return end(TransferFault::kCorrupt);
    }
    if (impl_.metrics) {
      impl_.metrics->add_received(
          static_cast<int64_t>(kChunkHeaderBytes + pending_->payload.size()), true);
    }
    chunks_.push_back(std::move(pending_));
    extend_deadline();
    read_frame();
  }

  void reject() {
    if (impl_.metrics) impl_.metrics->add_received(static_cast<int64_t>(kChunkHeaderBytes), false);
  }

  Impl& impl_;
  Spec spec_;
  tcp::socket socket_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  SteadyClock::time_point start_{};
  SteadyClock::time_point frame_start_{};
  std::array<uint8_t, kReplyHeaderBytes> reply_bytes_{};
  std::array<uint8_t, kFrameIndexBytes> frame_bytes_{};
  std::array<uint8_t, kChunkHeaderBytes> chunk_header_{};
  ChunkHeader header_;
  std::shared_ptr<KvChunk> pending_;
  std::optional<KvReplyHeader> reply_;
  std::vector<KvChunkHandle> chunks_;
  double rtt_s_ = 0.0;
  double deadline_s_ = 0.0;
  double payload_read_s_ = 0.0;
  size_t payload_read_bytes_ = 0;
  bool is_ended_ = false;
  bool is_cancelled_ = false;
};

void RemotePrefillConnector::Impl::close_all() {
  const std::set<std::shared_ptr<Transfer>> all = transfers;
  for (const auto& t : all) t->cancel();
}

void RemotePrefillConnector::Impl::finish(Transfer& t, std::optional<TransferFault> fault) {
  auto self = t.shared_from_this();  // keeps t alive past the erase
  transfers.erase(self);
  by_load.erase(t.spec().load_id);
  std::function<void()> wake;
  {
    std::lock_guard<std::mutex> lock(mu);
    PeerState& p = peers[t.spec().peer];
    --p.num_in_flight;
    if (t.reply()) {
      p.queue_delay_s = t.reply()->queue_delay_s;
      if (t.reply()->prefill_s_per_token > 0.0) p.s_per_token = t.reply()->prefill_s_per_token;
      p.rtt_s = ewma(p.rtt_s, t.rtt_s());
    }
    if (t.payload_bytes_per_s() > 0.0) p.bytes_per_s = ewma(p.bytes_per_s, t.payload_bytes_per_s());
    const bool is_peer_fault = fault && *fault != TransferFault::kCorrupt && !t.is_cancelled();
    if (is_peer_fault) {
      ++p.num_failures;
      const double backoff = std::min(5.0, 0.25 * std::pow(2.0, p.num_failures - 1));
      p.backoff_until = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(backoff));
    } else if (!fault) {
      p.num_failures = 0;
    }
    if (t.is_cancelled()) return;
    done.push_back(TransferDone{t.spec().load_id, std::move(t.chunks()), fault});
    wake = wakeup;
  }
  if (!fault && metrics) metrics->observe_transfer(t.elapsed_s());
  if (fault) {
    std::fprintf(stderr,
                 "[kv-transfer] remote prefill of load %llu ended early (%s) after %.3f s\n",
                 static_cast<unsigned long long>(t.spec().load_id), transfer_fault_name(*fault),
                 t.elapsed_s());
  }
  if (wake) wake();
}

namespace {

Result<PeerState> parse_peer(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == peer.size()) {
    return invalid_argument("'" + peer + "': expected HOST:PORT");
  }
  const std::string port = peer.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 ||
      std::stoi(port) > 65535 || std::stoi(port) == 0) {
    return invalid_argument("'" + peer + "': bad port");
  }
  PeerState p;
  p.host = peer.substr(0, colon);
  if (p.host.size() > 2 && p.host.front() == '[' && p.host.back() == ']') {
    p.host = p.host.substr(1, p.host.size() - 2);  // [::1]:9001
  }
  p.port = port;
  return p;
}

}  // namespace

Result<std::unique_ptr<RemotePrefillConnector>> RemotePrefillConnector::create(
    const ModelWeights& weights, int32_t block_size, const RemotePrefillOptions& options,
    const Metrics* engine_metrics, DisaggMetrics* metrics) {
  if (options.peers.empty() && !options.allow_no_peers)
    return invalid_argument("--role decode needs --prefill-peer HOST:PORT");
  if (options.chunk_tokens <= 0 || options.chunk_tokens % block_size != 0) {
    return invalid_argument("--kv-chunk-tokens must be a positive multiple of --block-size");
  }
  std::vector<PeerState> peers;
  for (const std::string& peer : options.peers) {
    Result<PeerState> p = parse_peer(peer);
    if (!p) return invalid_argument("--prefill-peer " + p.status().message());
    peers.push_back(std::move(*p));
  }
  const ModelConfig& config = weights.config();
  const ModelFingerprint fp =
      compute_model_fingerprint(weights.file(), config, block_size, options.chunk_tokens);
  const size_t payload = static_cast<size_t>(options.chunk_tokens) * kv_bytes_per_token(config);
  std::unique_ptr<RemotePrefillConnector> c(
      new RemotePrefillConnector(fp, block_size, payload, options, engine_metrics, metrics));
  c->impl_ = std::make_unique<Impl>(std::move(peers), metrics);
  return c;
}

RemotePrefillConnector::RemotePrefillConnector(const ModelFingerprint& fingerprint,
                                               int32_t block_size, size_t chunk_payload_bytes,
                                               const RemotePrefillOptions& options,
                                               const Metrics* engine_metrics,
                                               DisaggMetrics* metrics)
    : fingerprint_(fingerprint),
      block_size_(block_size),
      chunk_tokens_(options.chunk_tokens),
      blocks_per_chunk_(options.chunk_tokens / block_size),
      chunk_payload_bytes_(chunk_payload_bytes),
      options_(options),
      engine_metrics_(engine_metrics),
      metrics_(metrics) {}

RemotePrefillConnector::~RemotePrefillConnector() {
  impl_.reset();
}

void RemotePrefillConnector::set_wakeup(std::function<void()> wakeup) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->wakeup = std::move(wakeup);
}

int64_t RemotePrefillConnector::start_load(const KvLoadQuery& q) {
  const int64_t num_prompt = static_cast<int64_t>(q.prompt_tokens.size());
  // Never the last prompt token: its logits are needed (as find_prefix).
  const int64_t end_chunk =
      std::min<int64_t>((num_prompt - 1) / chunk_tokens_,
                        static_cast<int64_t>(q.block_hashes.size()) / blocks_per_chunk_);
  const int64_t first_chunk = q.num_pool_tokens / chunk_tokens_;
  if (first_chunk >= end_chunk) {
    if (metrics_) metrics_->add_decision(false);
    return 0;
  }
  const int64_t num_remote_tokens = end_chunk * chunk_tokens_ - q.num_pool_tokens;
  const size_t kv_bytes = static_cast<size_t>(end_chunk - first_chunk) * chunk_payload_bytes_;
  PrefillRates rates;
  if (engine_metrics_ != nullptr) {
    const double tps = engine_metrics_->load().prefill_tokens_per_s;
    if (tps > 0.0) rates.local_s_per_token = 1.0 / tps;
  }
  std::optional<size_t> peer;
  // A migrated request's KV is at its sender's, and nowhere else.
  const bool is_forced = !q.peer.empty();
  Result<PeerState> forced = is_forced ? parse_peer(std::string(q.peer)) : PeerState{};
  if (!forced) {
    std::fprintf(stderr, "[kv-transfer] migrated request's peer %s\n",
                 forced.status().message().c_str());
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    const SteadyClock::time_point now = SteadyClock::now();
    for (size_t i = 0; i < impl_->peers.size(); ++i) {
      const PeerState& p = impl_->peers[i];
      if (is_forced) {
        if (p.host == forced->host && p.port == forced->port) peer = i;
        continue;
      }
      if (p.is_sender_only || p.backoff_until > now) continue;
      if (!peer || p.num_in_flight < impl_->peers[*peer].num_in_flight) peer = i;
    }
    if (is_forced && !peer) {
      forced->is_sender_only = true;
      impl_->peers.push_back(std::move(*forced));
      peer = impl_->peers.size() - 1;
    }
    if (peer) {
      const PeerState& p = impl_->peers[*peer];
      rates.peer_queue_delay_s = p.queue_delay_s;
      rates.peer_s_per_token = p.s_per_token;
      rates.transfer_bytes_per_s = p.bytes_per_s;
      rates.rtt_s = p.rtt_s;
    }
  }
  const bool remote =
      peer && (is_forced || prefer_remote(options_.policy, rates, num_remote_tokens, kv_bytes));
  if (metrics_) metrics_->add_decision(remote);
  if (!remote) return 0;

  Impl::Transfer::Spec spec;
  spec.load_id = q.load_id;
  spec.peer = *peer;
  spec.first_chunk = static_cast<int32_t>(first_chunk);
  spec.chunk_tokens = chunk_tokens_;
  spec.payload_bytes = chunk_payload_bytes_;
  spec.deadline_s =
      transfer_deadline_s(rates, num_remote_tokens, kv_bytes, options_.min_deadline_s);
  spec.rates = rates;
  spec.num_tokens = num_remote_tokens;
  spec.min_deadline_s = options_.min_deadline_s;
  for (int64_t k = first_chunk; k < end_chunk; ++k) {
    spec.keys.push_back(make_chunk_key(
        fingerprint_, q.block_hashes[static_cast<size_t>((k + 1) * blocks_per_chunk_ - 1)]));
  }
  KvAsk ask;
  ask.fingerprint = fingerprint_;
  ask.chunk_tokens = chunk_tokens_;
  ask.first_chunk = static_cast<int32_t>(first_chunk);
  ask.end_chunk = static_cast<int32_t>(end_chunk);
  ask.cache_salt = std::string(q.cache_salt);
  ask.tokens.assign(
      q.prompt_tokens.begin(),
      q.prompt_tokens.begin() + static_cast<std::ptrdiff_t>(end_chunk * chunk_tokens_));
  spec.ask = encode_ask(ask);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->peers[*peer].num_in_flight;
  }
  Load load;
  load.first_chunk = static_cast<int32_t>(first_chunk);
  load.num_remote_tokens = num_remote_tokens;
  loads_[q.load_id] = std::move(load);
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, spec = std::move(spec)]() mutable {
    auto t = std::make_shared<Impl::Transfer>(*impl, std::move(spec));
    impl->transfers.insert(t);
    impl->by_load[t->spec().load_id] = t;
    t->start();
  });
  return num_remote_tokens;
}

void RemotePrefillConnector::cancel_load(uint64_t load_id) {
  if (loads_.erase(load_id) == 0) return;
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl, load_id] {
    auto it = impl->by_load.find(load_id);
    if (it == impl->by_load.end()) return;
    if (auto t = it->second.lock()) t->cancel();
  });
}

std::vector<KvLoadReady> RemotePrefillConnector::poll_loads() {
  std::vector<TransferDone> done;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    done.swap(impl_->done);
  }
  std::vector<KvLoadReady> ready;
  for (TransferDone& d : done) {
    auto it = loads_.find(d.load_id);
    if (it == loads_.end()) continue;  // cancelled meanwhile
    Load& load = it->second;
    load.chunks = std::move(d.chunks);
    const int64_t num_tokens =
        load.chunks.empty()
            ? 0
            : (load.first_chunk + static_cast<int64_t>(load.chunks.size())) * chunk_tokens_;
    if (d.fault && metrics_) {
      const int64_t got = static_cast<int64_t>(load.chunks.size()) * chunk_tokens_;
      metrics_->add_fault(*d.fault, std::max<int64_t>(0, load.num_remote_tokens - got));
    }
    ready.push_back({d.load_id, num_tokens});
  }
  return ready;
}

int64_t RemotePrefillConnector::load_blocks(uint64_t load_id, int64_t first_block,
                                            std::span<const int32_t> block_ids,
                                            KvStorage& storage) {
  auto it = loads_.find(load_id);
  if (it == loads_.end()) return 0;
  const Load load = std::move(it->second);
  loads_.erase(it);
  const ChunkRunWrite w = write_chunk_run(storage, load.chunks, load.first_chunk, blocks_per_chunk_,
                                          first_block, block_ids);
  if (!w.status) {
    std::fprintf(stderr, "[kv-transfer] chunk not written: %s\n", w.status.message().c_str());
  }
  return w.num_blocks;
}

}  // namespace strata::disagg
