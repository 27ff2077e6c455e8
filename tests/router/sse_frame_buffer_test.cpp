#include "router/sse_frame_buffer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::router {
namespace {

std::vector<std::string> drain(SseFrameBuffer* b) {
  std::vector<std::string> out;
  while (auto e = b->next()) out.push_back(*e);
  return out;
}

TEST(SseFrameBuffer, CutsWholeEventsFromArbitraryPieces) {
  const std::string stream = "data: {\"a\":1}\n\ndata: two\ndata: lines\n\ndata: [DONE]\n\n";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SseFrameBuffer b;
    std::vector<std::string> events;
    for (size_t i = 0; i < stream.size(); i += piece) {
      b.append(std::string_view(stream).substr(i, piece));
      for (std::string& e : drain(&b)) events.push_back(std::move(e));
    }
    ASSERT_EQ(events, (std::vector<std::string>{"data: {\"a\":1}\n\n", "data: two\ndata: lines\n\n",
                                                "data: [DONE]\n\n"}))
        << "piece " << piece;
    EXPECT_EQ(b.num_pending_bytes(), 0u);
  }
}

TEST(SseFrameBuffer, KeepsAnUnfinishedEventAndHandlesCrLf) {
  SseFrameBuffer b;
  b.append("data: x\r\n\r\ndata: half");
  EXPECT_EQ(drain(&b), (std::vector<std::string>{"data: x\r\n\r\n"}));
  EXPECT_EQ(b.num_pending_bytes(), 10u);
  b.append("\n\n");
  EXPECT_EQ(drain(&b), (std::vector<std::string>{"data: half\n\n"}));
}

}  // namespace
}  // namespace strata::router
