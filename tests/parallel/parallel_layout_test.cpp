// ParallelLayout: rank numbering, layer and shard ranges, and the one-line
// errors for sizes that do not match what mpirun started.
#include "parallel/parallel_layout.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

ParallelLayout make_layout(int t, int p, int rank) {
  ParallelLayout l;
  l.tensor_parallel_size = t;
  l.pipeline_parallel_size = p;
  l.rank = rank;
  return l;
}

TEST(ParallelLayout, RanksAreStageMajor) {
  const ParallelLayout l = make_layout(2, 2, 3);
  EXPECT_EQ(l.world_size(), 4);
  EXPECT_EQ(l.tp_rank(), 1);
  EXPECT_EQ(l.pp_rank(), 1);
  EXPECT_TRUE(l.is_last_stage());
  EXPECT_FALSE(l.is_first_stage());
  EXPECT_EQ(l.rank_of(0, 1), 1);
  EXPECT_EQ(l.rank_of(1, 0), 2);
  EXPECT_TRUE(make_layout(2, 2, 0).is_driver());
  EXPECT_FALSE(make_layout(1, 1, 0).is_parallel());
}

TEST(ParallelLayout, LayerRangesAreContiguousAndCoverAll) {
  for (int p = 1; p <= 5; ++p) {
    int next = 0;
    for (int s = 0; s < p; ++s) {
      int b = 0, e = 0;
      make_layout(1, p, s).layer_range(22, &b, &e);
      EXPECT_EQ(b, next);
      EXPECT_GE(e - b, 22 / p);
      EXPECT_LE(e - b, 22 / p + 1);
      next = e;
    }
    EXPECT_EQ(next, 22);
  }
}

TEST(ParallelLayout, ShardRangesCoverTheVocabulary) {
  int64_t b = 0, e = 0;
  make_layout(2, 1, 0).shard_range(32001, &b, &e);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(e, 16001);
  make_layout(2, 1, 1).shard_range(32001, &b, &e);
  EXPECT_EQ(b, 16001);
  EXPECT_EQ(e, 32001);
  // Stage 1's shard 1 (rank 3) takes the same columns as stage 0's.
  make_layout(2, 2, 3).shard_range(100, &b, &e);
  EXPECT_EQ(b, 50);
  EXPECT_EQ(e, 100);
}

TEST(ParallelLayout, ValidateNamesBothFlags) {
  EXPECT_TRUE(make_layout(2, 2, 0).validate(4).is_ok());
  const Status s = make_layout(2, 1, 0).validate(3);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(),
            "--tensor-parallel-size 2 x --pipeline-parallel-size 1 = 2 ranks, but mpirun started "
            "3 (run: mpirun -np 2 strata ...)");
  EXPECT_NE(make_layout(2, 1, 0).validate(1).message().find("not started by mpirun"),
            std::string::npos);
  EXPECT_FALSE(make_layout(0, 1, 0).validate(0).is_ok());
  EXPECT_FALSE(make_layout(1, 65, 0).validate(65).is_ok());
}

TEST(ParallelLayout, KeyNamesTheLayout) {
  EXPECT_EQ(make_layout(2, 1, 1).key(), "tp2.pp1.r1");
  EXPECT_EQ(make_layout(1, 1, 0).key(), "tp1.pp1.r0");
}

}  // namespace
}  // namespace strata
