// DecodeConnector: the connector of a decode worker that also serves its KV
// (--kv-transfer-port on a decode worker), so its running requests can
// migrate (docs/disagg.md "Migration"). Loads are the
// RemotePrefillConnector's (remote prefills, and migrated-in requests'
// KV pulled from their sender); saves are the KvPublisher's (a peer asking
// this worker for the KV of a migrated-out request's tokens gets it as a
// prefill worker's would). The two share nothing but the engine.
//
// Owns both; the same threading rules as theirs.
#pragma once

#include <memory>

#include "disagg/kv_publisher.h"
#include "disagg/remote_prefill_connector.h"
#include "engine/kv_connector.h"

namespace strata::disagg {

class DecodeConnector final : public KvConnector {
 public:
  DecodeConnector(std::unique_ptr<RemotePrefillConnector> loads,
                  std::unique_ptr<KvPublisher> publisher)
      : loads_(std::move(loads)), publisher_(std::move(publisher)) {}

  KvPublisher& publisher() { return *publisher_; }

  void set_wakeup(std::function<void()> wakeup) override { loads_->set_wakeup(std::move(wakeup)); }
  int64_t start_load(const KvLoadQuery& query) override { return loads_->start_load(query); }
  void cancel_load(uint64_t load_id) override { loads_->cancel_load(load_id); }
  std::vector<KvLoadReady> poll_loads() override { return loads_->poll_loads(); }
  int64_t load_blocks(uint64_t load_id, int64_t first_block, std::span<const int32_t> block_ids,
                      KvStorage& storage) override {
    return loads_->load_blocks(load_id, first_block, block_ids, storage);
  }
  void save(const KvSaveRequest& request, KvStorage& storage) override {
    publisher_->save(request, storage);
  }
  void request_finished(RequestId request_id) override { publisher_->request_finished(request_id); }
  void flush() override {}

 private:
  std::unique_ptr<RemotePrefillConnector> loads_;
  std::unique_ptr<KvPublisher> publisher_;
};

}  // namespace strata::disagg
