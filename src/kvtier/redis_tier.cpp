#include "kvtier/redis_tier.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "kvtier/chunk_codec.h"

namespace strata {
namespace {

constexpr std::string_view kKeyPrefix = "strata:kv:v1:";

timeval to_timeval(int32_t ms) {
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = static_cast<suseconds_t>(ms % 1000) * 1000;
  return tv;
}

std::string reply_text(const redisReply* r) {
  if (r->str == nullptr) return "";
  std::string s(r->str, std::min<size_t>(r->len, 200));
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

RedisTier::RedisTier(std::string host, int port, std::string password, int32_t timeout_ms,
                     size_t max_payload_bytes)
    : host_(std::move(host)),
      port_(port),
      password_(std::move(password)),
      timeout_ms_(timeout_ms),
      max_payload_bytes_(max_payload_bytes) {}

RedisTier::~RedisTier() {
  std::lock_guard<std::mutex> lock(mu_);
  disconnect_locked();
}

Result<std::unique_ptr<RedisTier>> RedisTier::connect(const std::string& url,
                                                      const std::string& password,
                                                      int32_t timeout_ms,
                                                      size_t max_payload_bytes) {
  constexpr std::string_view kScheme = "redis://";
  std::string_view rest(url);
  if (rest.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("--kv-remote '" + url + "': expected redis://host:port");
  }
  rest.remove_prefix(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view host = rest;
  int port = 6379;
  if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    const std::string_view port_text = rest.substr(colon + 1);
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return invalid_argument("--kv-remote '" + url + "': bad port");
    }
  }
  if (host.empty() || host.find_first_of("/@?#") != std::string_view::npos) {
    return invalid_argument("--kv-remote '" + url + "': expected redis://host:port");
  }
  if (timeout_ms <= 0) return invalid_argument("redis tier: timeout must be positive");
  std::unique_ptr<RedisTier> tier(
      new RedisTier(std::string(host), port, password, timeout_ms, max_payload_bytes));
  {
    // Try once now so a healthy server is ready; failing is fine (retried later).
    std::lock_guard<std::mutex> lock(tier->mu_);
    (void)tier->ensure_connected_locked();
  }
  return tier;
}

std::string RedisTier::redis_key(const ChunkKey& key) {
  return std::string(kKeyPrefix) + key.hex();
}

bool RedisTier::is_connected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ctx_ != nullptr;
}

void RedisTier::disconnect_locked() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

Status RedisTier::ensure_connected_locked() {
  if (ctx_ != nullptr) return Status::ok();
  const std::string where = "redis tier: " + host_ + ":" + std::to_string(port_);
  redisContext* c = redisConnectWithTimeout(host_.c_str(), port_, to_timeval(timeout_ms_));
  if (c == nullptr) return io_error(where + ": cannot allocate a connection");
  if (c->err != 0) {
    Status s = io_error(where + ": connect: " + c->errstr);
    redisFree(c);
    return s;
  }
  if (redisSetTimeout(c, to_timeval(timeout_ms_)) != REDIS_OK) {
    redisFree(c);
    return io_error(where + ": cannot set the timeout");
  }
  ctx_ = c;
  if (!password_.empty()) {
    const char* argv[] = {"AUTH", password_.data()};
    const size_t argvlen[] = {4, password_.size()};
    ReplyPtr r(static_cast<redisReply*>(redisCommandArgv(ctx_, 2, argv, argvlen)));
    if (r == nullptr || r->type != REDIS_REPLY_STATUS) {
      Status s =
          io_error(where + ": AUTH failed" +
                   (r == nullptr ? std::string(": ") + ctx_->errstr : ": " + reply_text(r.get())) +
                   " (check --kv-remote-password)");
      disconnect_locked();
      return s;
    }
  }
  return Status::ok();
}

void RedisTier::ReplyDeleter::operator()(redisReply* r) const {
  freeReplyObject(r);
}

Result<RedisTier::ReplyPtr> RedisTier::command_locked(
    std::initializer_list<std::string_view> args) {
  if (Status s = ensure_connected_locked(); !s.is_ok()) {
    recorder_.record_error();
    return s;
  }
  std::vector<const char*> argv;
  std::vector<size_t> argvlen;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    argvlen.push_back(a.size());
  }
  ReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), argvlen.data())));
  if (reply == nullptr || reply->type == REDIS_REPLY_ERROR) {
    Status s = io_error(
        "redis tier: " + host_ + ":" + std::to_string(port_) + ": " +
        std::string(argv[0], argvlen[0]) + ": " +
        (reply == nullptr ? std::string(ctx_->errstr) : "error reply: " + reply_text(reply.get())));
    disconnect_locked();
    recorder_.record_error();
    return s;
  }
  return reply;
}

Status RedisTier::protocol_error_locked(std::string_view command) {
  disconnect_locked();
  recorder_.record_error();
  return io_error("redis tier: " + std::string(command) + ": unexpected reply type");
}

bool RedisTier::contains(const ChunkKey& key) {
  auto run = [&]() -> Result<bool> {
    const std::string k = redis_key(key);
    std::lock_guard<std::mutex> lock(mu_);
    STRATA_ASSIGN_OR_RETURN(ReplyPtr r, command_locked({"EXISTS", k}));
    if (r->type != REDIS_REPLY_INTEGER) return protocol_error_locked("EXISTS");
    return r->integer > 0;
  };
  Result<bool> found = run();
  return found.is_ok() && *found;
}

Status RedisTier::put(const KvChunkHandle& chunk) {
  if (chunk == nullptr) return invalid_argument("redis tier: null chunk");
  if (chunk->payload.size() > max_payload_bytes_) {
    return invalid_argument("redis tier: chunk payload of " +
                            std::to_string(chunk->payload.size()) + " bytes exceeds the limit " +
                            std::to_string(max_payload_bytes_));
  }
  const TierTimer timer;
  const std::string k = redis_key(chunk->key);
  const std::string value = encode_chunk(*chunk);
  std::lock_guard<std::mutex> lock(mu_);
  // NX: a key already stored (by us or another replica) holds the same bytes.
  Result<ReplyPtr> r = command_locked({"SET", k, value, "NX"});
  if (!r) return r.status();
  if ((*r)->type == REDIS_REPLY_NIL) return Status::ok();
  if ((*r)->type != REDIS_REPLY_STATUS) return protocol_error_locked("SET");
  recorder_.record_put(static_cast<int64_t>(chunk->payload.size()), timer.seconds());
  return Status::ok();
}

Result<KvChunkHandle> RedisTier::get(const ChunkKey& key) {
  const TierTimer timer;
  const std::string k = redis_key(key);
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_ASSIGN_OR_RETURN(ReplyPtr r, command_locked({"GET", k}));
  if (r->type == REDIS_REPLY_NIL) {
    recorder_.record_miss(timer.seconds());
    return not_found("redis tier: no chunk " + key.hex());
  }
  if (r->type != REDIS_REPLY_STRING) return protocol_error_locked("GET");
  Status bad;
  if (r->len > kChunkHeaderBytes + max_payload_bytes_) {
    bad = invalid_argument("value of " + std::to_string(r->len) + " bytes exceeds the limit");
  } else {
    Result<KvChunkHandle> chunk =
        decode_chunk({reinterpret_cast<const uint8_t*>(r->str), r->len}, key, max_payload_bytes_);
    if (chunk) {
      recorder_.record_hit(static_cast<int64_t>((*chunk)->payload.size()), timer.seconds());
      return chunk;
    }
    bad = chunk.status();
  }
  // A corrupt value: a miss and an error; delete it so a good copy can be stored.
  recorder_.record_error();
  recorder_.record_miss(timer.seconds());
  Result<ReplyPtr> del = command_locked({"DEL", k});
  (void)del;  // a failed DEL is counted; the next get finds the value bad again
  return not_found("redis tier: " + k + ": " + bad.message() + "; value deleted");
}

Status RedisTier::remove(const ChunkKey& key) {
  const std::string k = redis_key(key);
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_ASSIGN_OR_RETURN(ReplyPtr r, command_locked({"DEL", k}));
  if (r->type != REDIS_REPLY_INTEGER) return protocol_error_locked("DEL");
  return Status::ok();
}

Status RedisTier::ping() {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_ASSIGN_OR_RETURN(ReplyPtr r, command_locked({"PING"}));
  if (r->type != REDIS_REPLY_STATUS) return protocol_error_locked("PING");
  return Status::ok();
}

TierStats RedisTier::stats() const {
  return recorder_.snapshot();
}

}  // namespace strata
