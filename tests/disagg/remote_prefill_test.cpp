// The KV transfer channel in one process: a prefill Engine (KvPublisher +
// KvTransferServer) and a decode EngineCore (RemotePrefillConnector) on
// loopback; fake prefill peers that answer with malformed bytes.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <thread>

#include "../engine/engine_test_util.h"
#include "disagg/kv_publisher.h"
#include "disagg/kv_transfer_protocol.h"
#include "disagg/kv_transfer_server.h"
#include "disagg/remote_prefill_connector.h"
#include "kvtier/chunk_codec.h"
#include "kvtier/chunk_io.h"

namespace strata::disagg {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using testing::greedy_request;
using testing::peaky_model;
using testing::random_prompt;
using testing::run_to_completion;
using testing::small_options;
using testing::solo_output;

constexpr int32_t kChunk = 32;

EngineOptions options() {
  EngineOptions o = small_options(256);
  o.kv_tiers.chunk_tokens = kChunk;
  o.num_threads = 1;
  return o;
}

// A prefill worker: an Engine whose connector is a KvPublisher, and its
// transfer server.
struct PrefillWorker {
  KvPublisher* publisher = nullptr;
  DisaggMetrics metrics;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<KvTransferServer> server;

  PrefillWorker() {
    const EngineOptions o = options();
    const ModelFingerprint fp = compute_model_fingerprint(
        peaky_model().weights->file(), peaky_model().weights->config(), o.block_size, kChunk);
    Result<std::unique_ptr<Engine>> e =
        Engine::create(*peaky_model().weights, *peaky_model().tokenizer, o,
                       [&](Metrics&, const Clock&) -> Result<std::unique_ptr<KvConnector>> {
                         auto p = std::make_unique<KvPublisher>(fp, o.block_size, kChunk);
                         publisher = p.get();
                         return std::unique_ptr<KvConnector>(std::move(p));
                       });
    EXPECT_TRUE(e.is_ok()) << e.status().message();
    engine = std::move(*e);
    Result<std::unique_ptr<KvTransferServer>> s =
        KvTransferServer::start(*engine, *publisher, &metrics, KvTransferServerOptions{});
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    server = std::move(*s);
  }
  ~PrefillWorker() { server.reset(); }
  std::string peer() const { return "127.0.0.1:" + std::to_string(server->port()); }
};

std::unique_ptr<EngineCore> decode_core(const std::string& peer, DisaggMetrics* metrics,
                                        double min_deadline_s = 10.0) {
  const EngineOptions o = options();
  RemotePrefillOptions ro;
  ro.peers = {peer};
  ro.policy = RemotePrefillPolicy::kAlways;
  ro.chunk_tokens = kChunk;
  ro.min_deadline_s = min_deadline_s;
  Result<std::unique_ptr<RemotePrefillConnector>> c =
      RemotePrefillConnector::create(*peaky_model().weights, o.block_size, ro, nullptr, metrics);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  Result<std::unique_ptr<EngineCore>> core = EngineCore::create(
      *peaky_model().weights, *peaky_model().tokenizer, o, nullptr, nullptr, std::move(*c));
  EXPECT_TRUE(core.is_ok()) << core.status().message();
  return std::move(*core);
}

std::vector<int32_t> decode(EngineCore& core, const GenerationRequest& r) {
  auto out = run_to_completion(core, {r});
  EXPECT_EQ(out[0][0].finish_reason, FinishReason::kLength) << out[0][0].error_message;
  return out[0][0].tokens;
}

TEST(RemotePrefill, OutputsEqualColocatedAndChunksVerify) {
  STRATA_REQUIRE_MODEL();
  PrefillWorker p;
  DisaggMetrics m;
  auto d = decode_core(p.peer(), &m);
  int64_t expected_chunks = 0;
  for (int32_t len : {10, 33, 64, 65, 150, 200}) {
    const GenerationRequest r = greedy_request(random_prompt(100 + len, len), 8);
    EXPECT_EQ(decode(*d, r), solo_output(r)) << len << " tokens";
    expected_chunks += (len - 1) / kChunk;
  }
  const DisaggMetricsSnapshot s = m.snapshot();
  EXPECT_EQ(s.chunks_verified, expected_chunks);
  EXPECT_EQ(s.chunks_rejected, 0);
  EXPECT_EQ(s.bytes_received, p.metrics.snapshot().bytes_sent);
  EXPECT_EQ(s.recomputed_tokens, 0);
  EXPECT_EQ(s.transfers_active, 0);
  EXPECT_EQ(d->kv_cache().num_free_blocks(), d->kv_cache().num_blocks());
}

// A fake prefill worker: accepts one connection, reads the ask, writes
// `reply(ask)` and closes.
class FakePeer {
 public:
  using Script = std::function<std::vector<uint8_t>(const KvAsk&)>;
  explicit FakePeer(Script script)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this, script = std::move(script)] {
      boost::system::error_code ec;
      tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec) return;
      std::array<uint8_t, kAskHeaderBytes> head{};
      asio::read(s, asio::buffer(head), ec);
      if (ec) return;
      Result<KvAskHeader> h = decode_ask_header(head);
      if (!h) return;
      std::vector<uint8_t> body(h->body_bytes());
      asio::read(s, asio::buffer(body), ec);
      Result<KvAsk> ask = decode_ask_body(*h, body);
      if (ec || !ask) return;
      const std::vector<uint8_t> out = script(*ask);
      asio::write(s, asio::buffer(out), ec);
      s.shutdown(tcp::socket::shutdown_both, ec);
    });
  }
  ~FakePeer() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    thread_.join();
  }
  std::string peer() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

std::vector<uint8_t> ok_reply() {
  const auto h = encode_reply_header(KvReplyHeader{});
  return {h.begin(), h.end()};
}

void append(std::vector<uint8_t>& out, std::span<const uint8_t> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// A well-formed chunk frame whose key is `key`.
void append_chunk(std::vector<uint8_t>& out, uint32_t index, const ChunkKey& key) {
  KvChunk c;
  c.key = key;
  c.num_tokens = kChunk;
  c.payload.assign(kChunk * kv_bytes_per_token(peaky_model().weights->config()), 0);
  append(out, encode_frame_index(index));
  const std::string encoded = encode_chunk(c);
  append(out, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(encoded.data()),
                                       encoded.size()));
}

struct FaultCase {
  const char* name;
  FakePeer::Script script;
  TransferFault fault;
};

TEST(RemotePrefill, MalformedRepliesCostARecomputeNotAnError) {
  STRATA_REQUIRE_MODEL();
  const GenerationRequest r = greedy_request(random_prompt(7, 150), 8);
  const std::vector<int32_t> want = solo_output(r);
  const std::vector<FaultCase> cases = {
      {"wrong model",
       [](const KvAsk&) {
         KvReplyHeader h;
         h.status = KvReplyStatus::kWrongModel;
         const auto b = encode_reply_header(h);
         return std::vector<uint8_t>(b.begin(), b.end());
       },
       TransferFault::kRefused},
      {"garbage reply", [](const KvAsk&) { return std::vector<uint8_t>(40, 0xab); },
       TransferFault::kCorrupt},
      {"closed after the reply", [](const KvAsk&) { return ok_reply(); }, TransferFault::kClosed},
      {"wrong key",
       [](const KvAsk& a) {
         std::vector<uint8_t> out = ok_reply();
         ChunkKey k;
         k.bytes[3] = 1;
         append_chunk(out, static_cast<uint32_t>(a.first_chunk), k);
         return out;
       },
       TransferFault::kCorrupt},
      {"out of order",
       [](const KvAsk& a) {
         std::vector<uint8_t> out = ok_reply();
         append_chunk(out, static_cast<uint32_t>(a.first_chunk + 1), ChunkKey{});
         return out;
       },
       TransferFault::kCorrupt},
      {"ends early",
       [](const KvAsk&) {
         std::vector<uint8_t> out = ok_reply();
         append(out, encode_frame_index(kEndOfChunks));
         return out;
       },
       TransferFault::kClosed},
      {"truncated chunk",
       [](const KvAsk& a) {
         std::vector<uint8_t> out = ok_reply();
         append(out, encode_frame_index(static_cast<uint32_t>(a.first_chunk)));
         out.insert(out.end(), 30, 0);
         return out;
       },
       TransferFault::kClosed},
  };
  for (const FaultCase& c : cases) {
    FakePeer peer(c.script);
    DisaggMetrics m;
    auto d = decode_core(peer.peer(), &m);
    EXPECT_EQ(decode(*d, r), want) << c.name;
    const DisaggMetricsSnapshot s = m.snapshot();
    EXPECT_EQ(s.faults.at(transfer_fault_name(c.fault)), 1) << c.name;
    EXPECT_EQ(s.recomputed_tokens, 4 * kChunk) << c.name;
    EXPECT_EQ(s.chunks_verified, 0) << c.name;
    EXPECT_EQ(d->kv_cache().num_free_blocks(), d->kv_cache().num_blocks()) << c.name;
  }
}

TEST(RemotePrefill, UnreachablePeerAndBackOff) {
  STRATA_REQUIRE_MODEL();
  // A port nobody listens on: bind one, close it.
  uint16_t port = 0;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = a.local_endpoint().port();
  }
  DisaggMetrics m;
  auto d = decode_core("127.0.0.1:" + std::to_string(port), &m);
  for (int i = 0; i < 3; ++i) {
    const GenerationRequest r = greedy_request(random_prompt(20 + i, 100), 4);
    EXPECT_EQ(decode(*d, r), solo_output(r));
  }
  const DisaggMetricsSnapshot s = m.snapshot();
  // The first ask fails to connect; later ones that fall in its back-off
  // are computed here without trying.
  EXPECT_GE(s.remote_decisions, 1);
  EXPECT_EQ(s.faults.at("unreachable"), s.remote_decisions);
  EXPECT_EQ(s.local_decisions + s.remote_decisions, 3);
}

TEST(RemotePrefill, AbortWhileLoadingClosesBothEnds) {
  STRATA_REQUIRE_MODEL();
  PrefillWorker p;
  DisaggMetrics m;
  auto d = decode_core(p.peer(), &m);
  Result<std::shared_ptr<RequestStream>> s =
      d->add_request(greedy_request(random_prompt(5, 200), 4));
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(d->num_loading(), 1);
  d->abort((*s)->id());
  EXPECT_EQ(d->num_loading(), 0);
  EXPECT_TRUE((*s)->is_closed());
  for (int i = 0; i < 2000 && (m.snapshot().transfers_active != 0 ||
                               p.metrics.snapshot().transfers_active != 0);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(m.snapshot().transfers_active, 0);
  EXPECT_EQ(p.metrics.snapshot().transfers_active, 0);
  EXPECT_EQ(d->kv_cache().num_free_blocks(), d->kv_cache().num_blocks());
}

}  // namespace
}  // namespace strata::disagg

namespace strata::disagg {
namespace {

TEST(RemotePrefill, BadPeersAreFlagErrors) {
  STRATA_REQUIRE_MODEL();
  for (const char* peer : {"nohost", "h:", ":9001", "h:99999", "h:0", "h:abc", "h:-1"}) {
    RemotePrefillOptions ro;
    ro.peers = {peer};
    ro.chunk_tokens = kChunk;
    Result<std::unique_ptr<RemotePrefillConnector>> c =
        RemotePrefillConnector::create(*peaky_model().weights, 16, ro, nullptr, nullptr);
    ASSERT_FALSE(c.is_ok()) << peer;
    EXPECT_NE(c.status().message().find("--prefill-peer"), std::string::npos)
        << c.status().message();
  }
  RemotePrefillOptions ro;
  ro.chunk_tokens = 24;  // not a multiple of the block size
  ro.peers = {"127.0.0.1:9001"};
  EXPECT_FALSE(
      RemotePrefillConnector::create(*peaky_model().weights, 16, ro, nullptr, nullptr).is_ok());
  ro.chunk_tokens = kChunk;
  ro.peers = {"[::1]:9001"};
  EXPECT_TRUE(
      RemotePrefillConnector::create(*peaky_model().weights, 16, ro, nullptr, nullptr).is_ok());
}

}  // namespace
}  // namespace strata::disagg
