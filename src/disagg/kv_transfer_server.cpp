#include "disagg/kv_transfer_server.h"

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "disagg/kv_transfer_protocol.h"
#include "kv/block_hash.h"
#include "kvtier/chunk_codec.h"

namespace strata::disagg {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' ? n : fallback;
}

}  // namespace

// (Outside the anonymous namespace: Impl, which has external linkage, holds one.)
// Posts to the I/O thread from other threads (the engine's: chunk sinks and
// stream listeners) for as long as the server lives. A request stream's
// listener cannot be removed and may fire after the server is gone (the
// engine finishes an aborted request later): it posts through this gate,
// which the server closes first thing in its destructor.
class PostGate {
 public:
  explicit PostGate(asio::io_context& io) : io_(&io) {}
  template <typename F>
  void post(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (io_ != nullptr) asio::post(*io_, std::forward<F>(f));
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    io_ = nullptr;
  }

 private:
  std::mutex mu_;
  asio::io_context* io_;
};

class KvTransferServer::Impl {
 public:
  class Session;

  Impl(Engine& engine, KvPublisher& publisher, DisaggMetrics* metrics)
      : engine(engine),
        publisher(publisher),
        metrics(metrics),
        acceptor(io),
        guard(asio::make_work_guard(io)),
        gate(std::make_shared<PostGate>(io)),
        corrupt_chunk(env_int("STRATA_TEST_KV_CORRUPT_CHUNK", -1)),
        chunk_delay_ms(env_int("STRATA_TEST_KV_CHUNK_DELAY_MS", 0)) {}

  void accept();
  void close_all();

  Engine& engine;
  KvPublisher& publisher;
  DisaggMetrics* metrics;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::executor_work_guard<asio::io_context::executor_type> guard;
  std::shared_ptr<PostGate> gate;
  std::set<std::shared_ptr<Session>> sessions;  // I/O thread only
  std::thread thread;
  uint16_t port = 0;
  const int64_t corrupt_chunk;
  const int64_t chunk_delay_ms;
  std::atomic<int64_t> num_chunks_sent{0};
};

class KvTransferServer::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, tcp::socket socket)
      : server_(server), socket_(std::move(socket)), delay_(server.io) {}

  void start() {
    if (server_.metrics) server_.metrics->add_active(1);
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(head_),
                     [self](boost::system::error_code ec, size_t) { self->on_head(ec); });
  }

  // Ends everything the connection started (I/O thread).
  void close() {
    if (closed_) return;
    closed_ = true;
    if (subscription_ != 0) server_.publisher.unsubscribe(subscription_);
    if (stream_ && !stream_->is_closed()) server_.engine.abort(stream_->id());
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    delay_.cancel();
    if (server_.metrics) {
      server_.metrics->add_active(-1);
      server_.metrics->add_ask_served();
    }
    server_.sessions.erase(shared_from_this());
  }

 private:
  struct Frame {
    std::vector<uint8_t> head;  // frame index + chunk header (or the reply header)
    KvChunkHandle chunk;        // null: no payload
  };

  void on_head(boost::system::error_code ec) {
    if (ec) return close();
    Result<KvAskHeader> h = decode_ask_header(head_);
    if (!h) return refuse(KvReplyStatus::kBadAsk, h.status().message());
    header_ = *h;
    body_.resize(header_.body_bytes());
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(body_),
                     [self](boost::system::error_code e, size_t) { self->on_body(e); });
  }

  void refuse(KvReplyStatus status, const std::string& why) {
    std::fprintf(stderr, "[kv-transfer] refused an ask: %s\n", why.c_str());
    KvReplyHeader r;
    r.status = status;
    const auto bytes = encode_reply_header(r);
    queue_.push_back(Frame{std::vector<uint8_t>(bytes.begin(), bytes.end()), nullptr});
    is_refused_ = true;
    pump();
  }

  void on_body(boost::system::error_code ec) {
    if (ec) return close();
    Result<KvAsk> ask = decode_ask_body(header_, body_);
    body_.clear();
    body_.shrink_to_fit();
    if (!ask) return refuse(KvReplyStatus::kBadAsk, ask.status().message());
    KvPublisher& pub = server_.publisher;
    if (ask->fingerprint != pub.fingerprint() || ask->chunk_tokens != pub.chunk_tokens()) {
      return refuse(KvReplyStatus::kWrongModel, "model fingerprint or chunk size differs");
    }
    const int64_t n = static_cast<int64_t>(ask->tokens.size());
    if (n + 1 > server_.engine.max_model_len()) {
      return refuse(KvReplyStatus::kBadAsk, "ask longer than --max-model-len");
    }
    const std::vector<BlockHash> hashes =
        block_hashes_of(ask->tokens, pub.block_size(), ask->cache_salt);
    const int32_t bpc = pub.chunk_tokens() / pub.block_size();
    std::vector<ChunkKey> keys;
    for (int32_t k = ask->first_chunk; k < ask->end_chunk; ++k) {
      keys.push_back(
          make_chunk_key(pub.fingerprint(), hashes[static_cast<size_t>((k + 1) * bpc - 1)]));
    }
    num_to_send_ = ask->end_chunk - ask->first_chunk;

    KvReplyHeader reply;
    const MetricsSnapshot load = server_.engine.metrics().load();
    if (load.prefill_tokens_per_s > 0.0) {
      reply.prefill_s_per_token = 1.0 / load.prefill_tokens_per_s;
      reply.queue_delay_s =
          static_cast<double>(load.num_pending_prefill_tokens) / load.prefill_tokens_per_s;
    }
    const auto rh = encode_reply_header(reply);
    queue_.push_back(Frame{std::vector<uint8_t>(rh.begin(), rh.end()), nullptr});

    std::weak_ptr<Session> weak = weak_from_this();
    std::shared_ptr<PostGate> gate = server_.gate;
    subscription_ = pub.subscribe(std::move(keys), ask->first_chunk,
                                  [weak, gate](int32_t index, KvChunkHandle chunk) {
                                    gate->post([weak, index, chunk = std::move(chunk)] {
                                      if (auto s = weak.lock()) s->on_chunk(index, chunk);
                                    });
                                  });
    GenerationRequest g;
    g.prompt_tokens = std::move(ask->tokens);
    g.max_tokens = 1;
    g.ignore_eos = true;
    g.sampling.temperature = 0.0f;
    g.cache_salt = std::move(ask->cache_salt);
    Result<std::shared_ptr<RequestStream>> stream = server_.engine.add_request(std::move(g));
    if (!stream) {
      std::fprintf(stderr, "[kv-transfer] engine refused an ask: %s\n",
                   stream.status().message().c_str());
      is_engine_done_ = true;
    } else {
      stream_ = *stream;
      stream_->set_listener([weak, gate] {
        gate->post([weak] {
          if (auto s = weak.lock()) s->on_engine_event();
        });
      });
    }
    // The decode worker sends nothing more: a read that completes means it
    // closed the connection (or broke the protocol). Either way, stop.
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(probe_byte_),
                            [self](boost::system::error_code, size_t) { self->close(); });
    pump();
  }

  void on_chunk(int32_t index, const KvChunkHandle& chunk) {
    if (closed_) return;
    Frame f;
    const auto idx = encode_frame_index(static_cast<uint32_t>(index));
    const auto ch = encode_chunk_header(*chunk);
    f.head.assign(idx.begin(), idx.end());
    f.head.insert(f.head.end(), ch.begin(), ch.end());
    f.chunk = chunk;
    const int64_t nth = server_.num_chunks_sent.fetch_add(1);
    if (nth == server_.corrupt_chunk && !chunk->payload.empty()) {
      auto bad = std::make_shared<KvChunk>(*chunk);  // the test hook: checksum no longer matches
      bad->payload[bad->payload.size() / 2] ^= 0x40;
      f.chunk = std::move(bad);
      std::fprintf(stderr, "[kv-transfer] test hook: corrupted chunk %d\n", index);
    }
    queue_.push_back(std::move(f));
    pump();
  }

  void on_engine_event() {
    if (stream_ && stream_->is_closed()) {
      is_engine_done_ = true;
      pump();
    }
  }

  void pump() {
    if (closed_ || is_writing_) return;
    if (queue_.empty()) {
      if (is_end_sent_) return close();
      if (is_refused_) return close();
      if (num_sent_ < num_to_send_ && !is_engine_done_) return;  // more to come
      const auto end = encode_frame_index(kEndOfChunks);
      queue_.push_back(Frame{std::vector<uint8_t>(end.begin(), end.end()), nullptr});
      is_end_sent_ = true;
    }
    is_writing_ = true;
    auto self = shared_from_this();
    if (server_.chunk_delay_ms > 0 && queue_.front().chunk) {
      delay_.expires_after(std::chrono::milliseconds(server_.chunk_delay_ms));
      delay_.async_wait([self](boost::system::error_code ec) {
        if (ec || self->closed_) return;
        self->write_front();
      });
      return;
    }
    write_front();
  }

  void write_front() {
    const Frame& f = queue_.front();
    std::array<asio::const_buffer, 2> bufs = {
        asio::buffer(f.head), f.chunk ? asio::buffer(f.chunk->payload) : asio::const_buffer()};
    auto self = shared_from_this();
    asio::async_write(socket_, bufs, [self](boost::system::error_code ec, size_t bytes) {
      self->is_writing_ = false;
      if (ec) return self->close();
      if (self->queue_.front().chunk) {
        ++self->num_sent_;
        if (self->server_.metrics) {
          // As the receiver counts: the chunk's header and payload.
          self->server_.metrics->add_sent(static_cast<int64_t>(bytes - kFrameIndexBytes));
        }
      }
      self->queue_.pop_front();
      self->pump();
    });
  }

  Impl& server_;
  tcp::socket socket_;
  asio::steady_timer delay_;
  std::array<uint8_t, kAskHeaderBytes> head_{};
  std::array<uint8_t, 1> probe_byte_{};
  KvAskHeader header_;
  std::vector<uint8_t> body_;
  std::deque<Frame> queue_;
  uint64_t subscription_ = 0;
  std::shared_ptr<RequestStream> stream_;
  int32_t num_to_send_ = 0;
  int32_t num_sent_ = 0;
  bool is_writing_ = false;
  bool is_engine_done_ = false;
  bool is_end_sent_ = false;
  bool is_refused_ = false;
  bool closed_ = false;
};

void KvTransferServer::Impl::accept() {
  acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      return accept();
    }
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto s = std::make_shared<Session>(*this, std::move(socket));
    sessions.insert(s);
    s->start();
    accept();
  });
}

void KvTransferServer::Impl::close_all() {
  boost::system::error_code ignored;
  acceptor.close(ignored);
  const std::set<std::shared_ptr<Session>> all = sessions;
  for (const auto& s : all) s->close();
}

Result<std::unique_ptr<KvTransferServer>> KvTransferServer::start(
    Engine& engine, KvPublisher& publisher, DisaggMetrics* metrics,
    const KvTransferServerOptions& options) {
  auto impl = std::make_unique<Impl>(engine, publisher, metrics);
  boost::system::error_code ec;
  const asio::ip::address addr = asio::ip::make_address(options.host, ec);
  if (ec) return invalid_argument("kv transfer: bad --kv-transfer-host '" + options.host + "'");
  const tcp::endpoint ep(addr, options.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kIoError, "kv transfer: cannot listen on " + options.host + ":" +
                                            std::to_string(options.port) + ": " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->accept();
  Impl* p = impl.get();
  impl->thread = std::thread([p] { p->io.run(); });
  return std::unique_ptr<KvTransferServer>(new KvTransferServer(std::move(impl)));
}

KvTransferServer::KvTransferServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KvTransferServer::~KvTransferServer() {
  Impl* p = impl_.get();
  p->gate->close();
  asio::post(p->io, [p] {
    p->close_all();
    p->guard.reset();
  });
  if (p->thread.joinable()) p->thread.join();
}

uint16_t KvTransferServer::port() const {
  return impl_->port;
}

}  // namespace strata::disagg
