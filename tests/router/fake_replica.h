// FakeReplica: an in-process strata_http server that plays a `strata serve`
// replica for the router's tests: it answers probes with a scripted
// PrefixProbe, and generations in a scripted way (a JSON body, an SSE
// stream, an error status, a stream that breaks off, a stream that hangs),
// and counts what it saw.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/prefix_probe.h"
#include "http/http_server.h"

namespace strata::router::testing {

class FakeReplica {
 public:
  enum class Mode {
    kJson,       // 200 JSON completion, usage.cached_tokens = cached_tokens
    kSse,        // 200 SSE: two text events, a usage event, [DONE]
    kStatus,     // `status` with an OpenAI error body
    kDrop,       // the handler drops the response (the server answers 500)
    kMidStream,  // SSE: one event, then the connection closes mid-body
    kHang,       // SSE: one event, then nothing; counts disconnects
    kSilent,     // no answer at all (a link gone quiet); counts disconnects
  };

  explicit FakeReplica(std::string name, std::string model_id = "fake");
  ~FakeReplica();

  std::string url() const;
  uint16_t port() const { return port_; }
  // Closes the listener and every connection (later connects are refused).
  void stop();

  void set_mode(Mode mode, int status = 200);
  void set_probe(const PrefixProbe& probe);
  // The probe route never answers (a replica too slow for the timeout).
  void set_probe_silent(bool silent);
  // Used for usage.prompt_tokens_details.cached_tokens.
  void set_cached_tokens(int64_t n);
  void set_health_status(int status);

  int num_generations() const { return num_generations_.load(); }
  int num_probes() const { return num_probes_.load(); }
  int num_disconnects() const { return num_disconnects_.load(); }
  std::string last_probe_body() const;
  std::string last_authorization() const;
  const std::string& name() const { return name_; }

 private:
  http::Router routes();
  void generation(http::HttpRequest req, http::ResponsePtr res);

  std::string name_;
  std::string model_id_;
  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  Mode mode_ = Mode::kJson;
  int status_ = 200;
  PrefixProbe probe_;
  bool is_probe_silent_ = false;
  int64_t cached_tokens_ = 0;
  int health_status_ = 200;
  std::string last_probe_body_;
  std::string last_authorization_;
  std::vector<http::ResponsePtr> kept_;  // silent probes, hanging streams
  std::atomic<int> num_generations_{0};
  std::atomic<int> num_probes_{0};
  std::atomic<int> num_disconnects_{0};
};

}  // namespace strata::router::testing
