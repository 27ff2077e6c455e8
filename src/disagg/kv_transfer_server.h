// KvTransferServer: a prefill worker's end of the KV transfer channel
// (kv_transfer_protocol.h), on Boost.Asio with one I/O thread.
//
// Per connection: read the ask; check the model fingerprint and chunk size
// (a mismatch is answered kWrongModel: nothing could ever verify); subscribe
// to the asked chunks' keys (KvPublisher); submit the tokens to the engine
// as a one-token greedy request, so its normal scheduling (and its own
// prefix cache) computes them; write each chunk the moment the publisher
// hands it over, then the end frame. The prompt's last chunk boundary is
// the end: the decode worker computes the rest itself.
//
// Cancellation both ways: a decode worker that closes the connection (its
// client went away, its deadline passed) aborts the engine request and the
// subscription; a request the engine ends early ends the reply early.
// Nothing outlives the connection.
//
// Test hooks (environment, read at start; only the fault tests set them):
//   STRATA_TEST_KV_CORRUPT_CHUNK=N  the N-th chunk this process sends
//                                   (0-based) has one payload byte flipped
//                                   after its checksum was computed;
//   STRATA_TEST_KV_CHUNK_DELAY_MS=D each chunk is sent D ms late.
//
// Borrows the Engine and the publisher (they must outlive it), and the
// metrics when given. Thread-safe: create, port() and the destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "disagg/disagg_metrics.h"
#include "disagg/kv_publisher.h"
#include "engine/engine.h"
#include "util/status.h"

namespace strata::disagg {

struct KvTransferServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = any free port
};

class KvTransferServer {
 public:
  static Result<std::unique_ptr<KvTransferServer>> start(Engine& engine, KvPublisher& publisher,
                                                         DisaggMetrics* metrics,
                                                         const KvTransferServerOptions& options);
  // Closes every connection (aborting their engine requests) and stops.
  ~KvTransferServer();
  KvTransferServer(const KvTransferServer&) = delete;
  KvTransferServer& operator=(const KvTransferServer&) = delete;

  uint16_t port() const;

  class Impl;

 private:
  explicit KvTransferServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::disagg
