// DiskTier beyond the conformance suite: persistence across restarts, crash
// safety (temp files, a real SIGKILL mid-write), and every corruption and
// write failure the issue lists.
#include "kvtier/disk_tier.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "kvtier/chunk_codec.h"
#include "kvtier_test_util.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::make_test_chunk;
using testing::TempDir;

constexpr size_t kDiskMax = size_t{8} << 20;
constexpr size_t kCapacity = size_t{64} << 20;

std::unique_ptr<DiskTier> open_tier(const std::string& dir, size_t capacity = kCapacity) {
  Result<std::unique_ptr<DiskTier>> t = DiskTier::open(dir, capacity, kDiskMax);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t ? std::move(*t) : nullptr;
}

// Every regular file under `dir`, by file name.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  }
  return names;
}

size_t count_temp_files(const std::string& dir) {
  size_t n = 0;
  for (const std::string& name : files_under(dir)) n += name.rfind(".tmp.", 0) == 0 ? 1 : 0;
  return n;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x20));
}

void expect_bad_file_dropped(DiskTier& tier, const KvChunkHandle& c) {
  const TierStats before = tier.stats();
  Result<KvChunkHandle> got = tier.get(c->key);
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().to_string();
  EXPECT_FALSE(is_tier_fault(got.status()));
  const TierStats after = tier.stats();
  EXPECT_EQ(after.errors, before.errors + 1);
  EXPECT_EQ(after.misses, before.misses + 1);
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_FALSE(fs::exists(tier.chunk_path(c->key)));
  EXPECT_FALSE(tier.contains(c->key));
}

TEST(DiskTierTest, RestartFindsEveryChunkAndKeepsMtimeOrder) {
  TempDir dir;
  std::vector<KvChunkHandle> chunks;
  for (uint32_t i = 0; i < 5; ++i) chunks.push_back(make_test_chunk(i, 10'000 + i));
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    for (const KvChunkHandle& c : chunks) ASSERT_TRUE(tier->put(c).is_ok());
    // Pin mtimes: chunk i was last used at time 1000 + i (chunk 0 is the oldest).
    for (uint32_t i = 0; i < chunks.size(); ++i) {
      const timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
      ASSERT_EQ(::utimensat(AT_FDCWD, tier->chunk_path(chunks[i]->key).c_str(), times, 0), 0);
    }
  }
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    EXPECT_EQ(tier->open_report().num_chunks, 5);
    EXPECT_EQ(tier->open_report().num_bad_files_removed, 0);
    EXPECT_EQ(tier->stats().stored_chunks, 5);
    for (const KvChunkHandle& c : chunks) {
      Result<KvChunkHandle> got = tier->get(c->key);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_EQ((*got)->payload, c->payload);
    }
  }
  // Re-pin (the gets above refreshed the mtimes), then reopen with room for
  // four: the oldest by mtime goes.
  for (uint32_t i = 0; i < chunks.size(); ++i) {
    const std::string hex = chunks[i]->key.hex();
    const std::string path = dir.path() + "/" + hex.substr(0, 2) + "/" + hex;
    const timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  std::unique_ptr<DiskTier> tier = open_tier(dir.path(), 4 * (10'004 + kChunkHeaderBytes));
  EXPECT_FALSE(tier->contains(chunks[0]->key));
  for (uint32_t i = 1; i < 5; ++i) EXPECT_TRUE(tier->contains(chunks[i]->key)) << i;
  EXPECT_EQ(tier->stats().evictions, 1);
}

TEST(DiskTierTest, InjectedEnospcFailsThePutAndLeavesNothingBehind) {
  TempDir dir;
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  tier->inject_fault_for_testing({.write_errno = ENOSPC, .num_failing_puts = 1});
  KvChunkHandle c = make_test_chunk(1, 5000);
  Status s = tier->put(c);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_TRUE(is_tier_fault(s));
  EXPECT_NE(s.message().find("No space left"), std::string::npos) << s.message();
  EXPECT_FALSE(tier->contains(c->key));
  EXPECT_TRUE(files_under(dir.path()).empty());  // no temp file, no partial chunk
  EXPECT_EQ(tier->stats().errors, 1);
  EXPECT_EQ(tier->stats().bytes_written, 0);
  // The fault was one-shot: the next put works.
  ASSERT_TRUE(tier->put(c).is_ok());
  EXPECT_TRUE(tier->get(c->key).is_ok());
}

TEST(DiskTierTest, InjectedShortWriteAndReadOnlyErrorsLeaveNothingBehind) {
  TempDir dir;
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  // EROFS / EACCES are what a read-only mount or directory gives; used here
  // because the real permission test below cannot fail writes under root.
  for (int err : {EROFS, EACCES, EIO}) {
    tier->inject_fault_for_testing({.write_errno = err, .num_failing_puts = 1});
    KvChunkHandle c = make_test_chunk(static_cast<uint32_t>(err), 3000);
    Status s = tier->put(c);
    EXPECT_EQ(s.code(), StatusCode::kIoError) << s.to_string();
    EXPECT_FALSE(tier->contains(c->key));
  }
  EXPECT_TRUE(files_under(dir.path()).empty());
}

// The checks against a read-only cache directory; returns "" or what failed.
std::string read_only_checks(const std::string& dir, const KvChunkHandle& stored) {
  Result<std::unique_ptr<DiskTier>> tier = DiskTier::open(dir, kCapacity, kDiskMax);
  if (!tier) return "open: " + tier.status().to_string();  // reopening read-only works
  if (!(*tier)->contains(stored->key)) return "the stored chunk is not indexed";
  if (!(*tier)->get(stored->key).is_ok()) return "reads fail";
  for (uint32_t seed : {2u, 3u, 4u}) {  // some land in the existing subdirectory, some not
    KvChunkHandle c = make_test_chunk(seed, 2000);
    Status s = (*tier)->put(c);
    if (s.is_ok()) return "a put into a read-only directory succeeded";
    if (!is_tier_fault(s)) return "not a fault: " + s.to_string();
    if ((*tier)->contains(c->key)) return "a failed put is indexed";
  }
  if ((*tier)->stats().errors != 3) return "errors not counted";
  return "";
}

// A real read-only directory (chmod 0555). Root writes through mode bits
// (CAP_DAC_OVERRIDE), so under root the checks run in a forked child that
// dropped to uid/gid 65534 (nobody); if even that is impossible the test
// skips and InjectedShortWriteAndReadOnlyErrorsLeaveNothingBehind (the
// injection seam) is the coverage.
TEST(DiskTierTest, RealReadOnlyDirectoryFailsPutsCleanly) {
  TempDir dir;
  KvChunkHandle stored = make_test_chunk(1, 2000);
  std::string sub;
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    ASSERT_TRUE(tier->put(stored).is_ok());
    sub = fs::path(tier->chunk_path(stored->key)).parent_path().string();
  }
  ASSERT_EQ(::chmod(sub.c_str(), 0555), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  if (::geteuid() != 0) {
    EXPECT_EQ(read_only_checks(dir.path(), stored), "");
  } else {
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(pipe_fds[0]);
      std::string result = "skip";
      if (::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0) {
        result = read_only_checks(dir.path(), stored);
      }
      (void)!::write(pipe_fds[1], result.data(), result.size());
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string result;
    char buf[512];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) result.append(buf, n);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (result == "skip") {
      ::chmod(sub.c_str(), 0755);
      ::chmod(dir.path().c_str(), 0755);
      GTEST_SKIP() << "root cannot drop to uid 65534 here; the injection seam covers this";
    }
    EXPECT_EQ(result, "");
  }
  ::chmod(sub.c_str(), 0755);
  ::chmod(dir.path().c_str(), 0755);
  EXPECT_EQ(count_temp_files(dir.path()), 0u);
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_chunks, 1);
}

TEST(DiskTierTest, BitFlipInPayloadIsAMissAnErrorAndTheFileGoes) {
  TempDir dir;
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  KvChunkHandle c = make_test_chunk(1, 4096);
  ASSERT_TRUE(tier->put(c).is_ok());
  flip_byte(tier->chunk_path(c->key), kChunkHeaderBytes + 1234);
  expect_bad_file_dropped(*tier, c);
  ASSERT_TRUE(tier->put(c).is_ok());  // a good copy can be stored again
  EXPECT_TRUE(tier->get(c->key).is_ok());
}

TEST(DiskTierTest, BitFlipInHeaderIsAMissAndTheFileGoes) {
  TempDir dir;
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  KvChunkHandle c = make_test_chunk(1, 4096);
  ASSERT_TRUE(tier->put(c).is_ok());
  flip_byte(tier->chunk_path(c->key), 50);  // num_tokens
  expect_bad_file_dropped(*tier, c);
}

TEST(DiskTierTest, TruncatedFileIsAMissWhileRunningAndRemovedAtOpen) {
  TempDir dir;
  KvChunkHandle a = make_test_chunk(1, 4096);
  KvChunkHandle b = make_test_chunk(2, 4096);
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    ASSERT_TRUE(tier->put(a).is_ok());
    ASSERT_TRUE(tier->put(b).is_ok());
    fs::resize_file(tier->chunk_path(a->key), 3000);
    expect_bad_file_dropped(*tier, a);
    fs::resize_file(tier->chunk_path(b->key), 40);  // not even a header
  }
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 1);
  EXPECT_EQ(tier->open_report().num_chunks, 0);
  EXPECT_FALSE(fs::exists(tier->chunk_path(b->key)));
}

TEST(DiskTierTest, ChunkFromAnotherModelUnderTheRightNameIsAMiss) {
  TempDir dir;
  ModelFingerprint other_model;
  other_model.digest[0] = 1;
  KvChunkHandle ours = make_test_chunk(1, 4096);
  KvChunkHandle theirs = make_test_chunk(1, 4096, other_model);  // same tokens, other model
  ASSERT_NE(ours->key, theirs->key);
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    ASSERT_TRUE(tier->put(ours).is_ok());
    ASSERT_TRUE(tier->put(theirs).is_ok());
    fs::copy_file(tier->chunk_path(theirs->key), tier->chunk_path(ours->key),
                  fs::copy_options::overwrite_existing);
    expect_bad_file_dropped(*tier, ours);
    EXPECT_TRUE(tier->get(theirs->key).is_ok());
    // The same copy found at start-up: the header's key does not match the name.
    fs::copy_file(tier->chunk_path(theirs->key), tier->chunk_path(ours->key),
                  fs::copy_options::overwrite_existing);
  }
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 1);
  EXPECT_FALSE(tier->contains(ours->key));
  EXPECT_TRUE(tier->contains(theirs->key));
}

TEST(DiskTierTest, LeftoverTempFilesAndGarbageAreCleanedAtOpen) {
  TempDir dir;
  KvChunkHandle c = make_test_chunk(1, 4096);
  std::string hex;
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    ASSERT_TRUE(tier->put(c).is_ok());
    hex = c->key.hex();
  }
  const std::string sub = dir.path() + "/" + hex.substr(0, 2);
  // As if a writer was SIGKILLed mid-write: half a chunk in a temp file.
  const std::string encoded = encode_chunk(*make_test_chunk(2, 4096));
  std::ofstream(sub + "/.tmp." + hex + ".999.0", std::ios::binary)
      << encoded.substr(0, encoded.size() / 2);
  std::ofstream(sub + "/" + std::string(64, 'a'), std::ios::binary) << "garbage";
  std::ofstream(dir.path() + "/README", std::ios::binary) << "not ours";
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_temp_files_removed, 1);
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 1);
  EXPECT_EQ(tier->open_report().num_chunks, 1);
  EXPECT_EQ(count_temp_files(dir.path()), 0u);
  EXPECT_TRUE(fs::exists(dir.path() + "/README"));  // foreign files are left alone
  EXPECT_TRUE(tier->get(c->key).is_ok());
}

TEST(DiskTierTest, FileDeletedBehindTheTiersBackIsAPlainMiss) {
  TempDir dir;
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  KvChunkHandle c = make_test_chunk(1, 100);
  ASSERT_TRUE(tier->put(c).is_ok());
  fs::remove(tier->chunk_path(c->key));
  Result<KvChunkHandle> got = tier->get(c->key);
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(tier->stats().errors, 0);
  EXPECT_FALSE(tier->contains(c->key));
}

TEST(DiskTierTest, OversizedPayloadInAFileIsRejectedAtOpen) {
  TempDir dir;
  KvChunkHandle c = make_test_chunk(1, 5000);
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    ASSERT_TRUE(tier->put(c).is_ok());
  }
  // Opened by a process whose chunks are smaller: the file exceeds the bound.
  Result<std::unique_ptr<DiskTier>> tier = DiskTier::open(dir.path(), kCapacity, 4000);
  ASSERT_TRUE(tier.is_ok());
  EXPECT_EQ((*tier)->open_report().num_bad_files_removed, 1);
  EXPECT_FALSE((*tier)->contains(c->key));
}

// ---------------------------------------------------------------------------
// Symlinks and other non-regular files planted in the cache directory. The
// outside files are perfect forgeries (valid encodings of the very chunk the
// tier looks for), so a miss proves they were not read; a snapshot of the
// outside directory (names, types, sizes, mtimes, bytes) proves nothing there
// was modified, created or deleted.

// Every entry under `dir` (not following symlinks) -> its type, size, mtime
// and, for regular files, bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    EXPECT_EQ(::lstat(e.path().c_str(), &st), 0) << e.path();
    std::string v = std::to_string(st.st_mode & S_IFMT) + ":" + std::to_string(st.st_size) + ":" +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) {
      std::ifstream f(e.path(), std::ios::binary);
      v += ":" + std::string(std::istreambuf_iterator<char>(f), {});
    } else if (S_ISLNK(st.st_mode)) {
      v += ":" + fs::read_symlink(e.path()).string();
    }
    out[e.path().string()] = v;
  }
  return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// An outside directory holding a forged copy of `c` (and a plain file).
struct Outside {
  TempDir dir;
  std::string forgery;  // path of the valid encoding of c
  std::string plain;    // path of a file that is not a chunk
  explicit Outside(const KvChunk& c) {
    forgery = dir.path() + "/forged";
    plain = dir.path() + "/plain";
    write_bytes(forgery, encode_chunk(c));
    write_bytes(plain, "outside, must stay as it is");
  }
};

// Unblocks (and reports) a reader stuck opening one of `fifos`: opening a
// FIFO for writing without blocking succeeds only when a reader waits on it.
class FifoWatchdog {
 public:
  explicit FifoWatchdog(std::vector<std::string> fifos) : fifos_(std::move(fifos)) {
    thread_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        if (cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return done_; })) break;
        if (++ticks_ < 15) continue;  // 3 s: far past any open() of a few files
        for (const std::string& f : fifos_) {
          const int fd = ::open(f.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
          if (fd >= 0) {
            had_blocked_reader_ = true;
            ::close(fd);
          }
        }
      }
    });
  }
  ~FifoWatchdog() { stop(); }
  // Stops the watchdog; true when a reader was blocked on a FIFO.
  bool stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return had_blocked_reader_;
  }

 private:
  std::vector<std::string> fifos_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  int ticks_ = 0;
  bool had_blocked_reader_ = false;
  std::thread thread_;
};

void expect_foreign_miss(DiskTier& tier, const KvChunkHandle& c) {
  Result<KvChunkHandle> got = tier.get(c->key);
  ASSERT_FALSE(got.is_ok()) << "read through a non-regular file";
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().to_string();
  EXPECT_FALSE(is_tier_fault(got.status()));  // the manager keeps using the tier
  EXPECT_FALSE(tier.contains(c->key));
}

TEST(DiskTierTest, SymlinkAtAChunkNameIsNeverReadAndAPutReplacesIt) {
  TempDir dir;
  KvChunkHandle c = make_test_chunk(1, 4096);
  Outside outside(*c);
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  ASSERT_TRUE(tier->put(c).is_ok());
  const std::string path = tier->chunk_path(c->key);
  ASSERT_TRUE(fs::remove(path));
  fs::create_symlink(outside.forgery, path);
  const auto before = snapshot(outside.dir.path());

  expect_foreign_miss(*tier, c);
  EXPECT_TRUE(fs::is_symlink(path));  // left in place
  EXPECT_EQ(tier->stats().hits, 0);
  // A put goes to a temp file and renames over the link: the target is not
  // written, the name then holds our regular file.
  ASSERT_TRUE(tier->put(c).is_ok());
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  Result<KvChunkHandle> got = tier->get(c->key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)->payload, c->payload);
  EXPECT_EQ(snapshot(outside.dir.path()), before);

  // The same link found at start-up is skipped, neither read nor deleted.
  ASSERT_TRUE(fs::remove(path));
  fs::create_symlink(outside.forgery, path);
  tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_chunks, 0);
  EXPECT_EQ(tier->open_report().num_non_regular_skipped, 1);
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 0);
  EXPECT_FALSE(tier->contains(c->key));
  EXPECT_TRUE(fs::is_symlink(path));
  EXPECT_EQ(snapshot(outside.dir.path()), before);
}

TEST(DiskTierTest, SymlinksAtTheFinalAndTempNamesAreNeverWrittenThrough) {
  TempDir dir;
  KvChunkHandle c = make_test_chunk(2, 4096);
  Outside outside(*c);
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  const std::string hex = c->key.hex();
  const std::string sub = dir.path() + "/" + hex.substr(0, 2);
  ASSERT_TRUE(fs::create_directory(sub));
  // The final name: a link to an outside file. The first temp names this
  // tier will try (counter 0, 1, ...): links to an existing outside file and
  // dangling links to outside paths a write through them would create.
  fs::create_symlink(outside.plain, sub + "/" + hex);
  const std::string prefix = sub + "/.tmp." + hex + "." + std::to_string(::getpid()) + ".";
  fs::create_symlink(outside.plain, prefix + "0");
  fs::create_symlink(outside.dir.path() + "/created-1", prefix + "1");
  fs::create_symlink(outside.dir.path() + "/created-2", prefix + "2");
  const auto before = snapshot(outside.dir.path());

  ASSERT_TRUE(tier->put(c).is_ok());
  EXPECT_EQ(snapshot(outside.dir.path()), before);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(sub + "/" + hex)));
  Result<KvChunkHandle> got = tier->get(c->key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)->payload, c->payload);
  for (const char* n : {"0", "1", "2"}) EXPECT_TRUE(fs::is_symlink(prefix + n)) << n;
  // Reopening skips the three temp-name links (not regular: not deleted).
  tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_chunks, 1);
  EXPECT_EQ(tier->open_report().num_temp_files_removed, 0);
  EXPECT_EQ(tier->open_report().num_non_regular_skipped, 3);
  EXPECT_EQ(snapshot(outside.dir.path()), before);
}

TEST(DiskTierTest, SymlinkedSubdirectoryIsNeverFollowed) {
  TempDir dir;
  KvChunkHandle c = make_test_chunk(3, 4096);
  Outside outside(*c);
  const std::string hex = c->key.hex();
  // Outside: what a followed scan would index (a forged chunk under its
  // name) or delete (a temp file, a bad chunk file).
  write_bytes(outside.dir.path() + "/" + hex, encode_chunk(*c));
  write_bytes(outside.dir.path() + "/.tmp." + hex + ".1.0", "half a chunk");
  write_bytes(outside.dir.path() + "/" + hex.substr(0, 2) + std::string(62, '0'), "garbage");
  const std::string sub = dir.path() + "/" + hex.substr(0, 2);
  fs::create_directory_symlink(outside.dir.path(), sub);
  const auto before = snapshot(outside.dir.path());

  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_EQ(tier->open_report().num_chunks, 0);
  EXPECT_EQ(tier->open_report().num_non_regular_skipped, 1);
  EXPECT_EQ(tier->open_report().num_temp_files_removed, 0);
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 0);
  EXPECT_FALSE(tier->contains(c->key));
  EXPECT_EQ(snapshot(outside.dir.path()), before);

  // A put replaces the link (not its target) with a real directory.
  ASSERT_TRUE(tier->put(c).is_ok());
  EXPECT_FALSE(fs::is_symlink(sub));
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(sub)));
  EXPECT_TRUE(tier->get(c->key).is_ok());
  EXPECT_EQ(snapshot(outside.dir.path()), before);

  // The subdirectory swapped for a link while the chunk is indexed: get is a
  // miss and remove deletes nothing through it; chunks in other
  // subdirectories are unaffected.
  uint32_t seed = 100;
  while (make_test_chunk(seed, 0)->key.hex().substr(0, 2) == hex.substr(0, 2)) ++seed;
  KvChunkHandle other = make_test_chunk(seed, 4096);
  ASSERT_TRUE(tier->put(other).is_ok());
  auto swap_in_link = [&](const std::string& moved) {
    fs::rename(sub, moved);
    fs::create_directory_symlink(outside.dir.path(), sub);
  };
  swap_in_link(sub + ".moved1");
  expect_foreign_miss(*tier, c);
  EXPECT_TRUE(tier->get(other->key).is_ok());
  ASSERT_TRUE(fs::remove(sub));  // the link
  fs::rename(sub + ".moved1", sub);
  ASSERT_TRUE(tier->put(c).is_ok());  // indexed again
  swap_in_link(sub + ".moved2");
  EXPECT_TRUE(tier->remove(c->key).is_ok());
  EXPECT_FALSE(tier->contains(c->key));
  EXPECT_TRUE(fs::is_symlink(sub));
  EXPECT_TRUE(fs::exists(sub + ".moved2/" + hex));  // the real file was not reached either
  EXPECT_EQ(snapshot(outside.dir.path()), before);
  EXPECT_TRUE(tier->get(other->key).is_ok());
}

TEST(DiskTierTest, EvictionNeverDeletesThroughASymlink) {
  TempDir dir;
  KvChunkHandle a = make_test_chunk(5, 4096);
  KvChunkHandle b = make_test_chunk(6, 4096);
  KvChunkHandle c = make_test_chunk(7, 4096);
  Outside outside(*a);
  std::unique_ptr<DiskTier> tier = open_tier(dir.path(), 2 * (4096 + kChunkHeaderBytes));
  ASSERT_TRUE(tier->put(a).is_ok());
  ASSERT_TRUE(tier->put(b).is_ok());
  const std::string path_a = tier->chunk_path(a->key);
  ASSERT_TRUE(fs::remove(path_a));
  fs::create_symlink(outside.forgery, path_a);
  const auto before = snapshot(outside.dir.path());
  ASSERT_TRUE(tier->put(c).is_ok());  // evicts a, the least recently used
  EXPECT_EQ(tier->stats().evictions, 1);
  EXPECT_FALSE(tier->contains(a->key));
  EXPECT_TRUE(fs::is_symlink(path_a));  // not ours: left alone
  EXPECT_EQ(snapshot(outside.dir.path()), before);
  EXPECT_TRUE(tier->get(b->key).is_ok());
  EXPECT_TRUE(tier->get(c->key).is_ok());
}

TEST(DiskTierTest, FifosAndDirectoriesAtChunkNamesNeverBlockOrBreakTheTier) {
  TempDir dir;
  KvChunkHandle a = make_test_chunk(8, 4096);   // its name will hold a FIFO
  KvChunkHandle b = make_test_chunk(9, 4096);   // a link to an outside FIFO
  KvChunkHandle c = make_test_chunk(10, 4096);  // a directory
  KvChunkHandle d = make_test_chunk(11, 4096);  // a link to an outside directory
  KvChunkHandle ok = make_test_chunk(12, 4096);
  Outside outside(*a);
  const std::string outside_fifo = outside.dir.path() + "/fifo";
  const std::string outside_subdir = outside.dir.path() + "/subdir";
  ASSERT_EQ(::mkfifo(outside_fifo.c_str(), 0644), 0);
  ASSERT_TRUE(fs::create_directory(outside_subdir));
  std::string fifo_a;
  {
    std::unique_ptr<DiskTier> tier = open_tier(dir.path());
    for (const KvChunkHandle& x : {a, b, c, d, ok}) ASSERT_TRUE(tier->put(x).is_ok());
    fifo_a = tier->chunk_path(a->key);
    for (const KvChunkHandle& x : {a, b, c, d}) ASSERT_TRUE(fs::remove(tier->chunk_path(x->key)));
    ASSERT_EQ(::mkfifo(fifo_a.c_str(), 0644), 0);
    fs::create_symlink(outside_fifo, tier->chunk_path(b->key));
    ASSERT_TRUE(fs::create_directory(tier->chunk_path(c->key)));
    fs::create_directory_symlink(outside_subdir, tier->chunk_path(d->key));
    // A FIFO at a temp name, too.
    const std::string hex = ok->key.hex();
    ASSERT_EQ(
        ::mkfifo((dir.path() + "/" + hex.substr(0, 2) + "/.tmp." + hex + ".1.0").c_str(), 0644), 0);
    const auto before = snapshot(outside.dir.path());
    FifoWatchdog watchdog({fifo_a, outside_fifo});
    for (const KvChunkHandle& x : {a, b, c, d}) expect_foreign_miss(*tier, x);
    EXPECT_FALSE(watchdog.stop()) << "get() blocked opening a FIFO";
    EXPECT_EQ(snapshot(outside.dir.path()), before);
    EXPECT_TRUE(tier->get(ok->key).is_ok());
  }
  const auto before = snapshot(outside.dir.path());
  FifoWatchdog watchdog({fifo_a, outside_fifo});
  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  EXPECT_FALSE(watchdog.stop()) << "open() blocked opening a FIFO";
  EXPECT_EQ(tier->open_report().num_chunks, 1);
  EXPECT_EQ(tier->open_report().num_non_regular_skipped, 5);
  EXPECT_EQ(tier->open_report().num_bad_files_removed, 0);
  EXPECT_EQ(tier->open_report().num_temp_files_removed, 0);
  EXPECT_EQ(snapshot(outside.dir.path()), before);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo_a)));  // left in place
  EXPECT_TRUE(tier->get(ok->key).is_ok());
  // Puts over the FIFO and the links replace them; the directory stays
  // (rename cannot replace it), so that one put fails, as a fault of the tier.
  for (const KvChunkHandle& x : {a, b, d}) {
    ASSERT_TRUE(tier->put(x).is_ok()) << x->key.hex();
    EXPECT_TRUE(tier->get(x->key).is_ok());
  }
  EXPECT_FALSE(tier->put(c).is_ok());
  EXPECT_FALSE(tier->contains(c->key));
  EXPECT_EQ(count_temp_files(dir.path()), 0u);
  EXPECT_EQ(snapshot(outside.dir.path()), before);
}

// A real crash: a child process writes chunks in a loop and is SIGKILLed at
// an arbitrary point. Reopening must index only complete, valid chunks and
// leave no temp file behind, whatever the kill interrupted.
TEST(DiskTierTest, SigkillDuringWritesLeavesOnlyCompleteChunks) {
  TempDir dir;
  constexpr size_t kChunkBytes = size_t{4} << 20;
  // Chunk i: key of make_test_chunk(i), one shared payload, so the child
  // spends its time writing (the window a kill should hit), not generating.
  const std::vector<uint8_t> payload = make_test_chunk(12345, kChunkBytes)->payload;
  auto chunk_i = [&](uint32_t i) {
    auto c = std::make_shared<KvChunk>();
    c->key = make_test_chunk(i, 0)->key;
    c->num_tokens = 32;
    c->payload = payload;
    return KvChunkHandle(std::move(c));
  };
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Result<std::unique_ptr<DiskTier>> tier = DiskTier::open(dir.path(), size_t{1} << 30, kDiskMax);
    if (!tier) ::_exit(1);
    for (uint32_t i = 0;; ++i) {
      (void)(*tier)->put(chunk_i(i));
    }
  }
  // Wait until the child has completed a few chunks, then kill it mid-stream.
  for (int i = 0; i < 2000; ++i) {
    size_t complete = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir.path(), ec)) {
      const std::string name = e.path().filename().string();
      complete += name.size() == 64 ? 1 : 0;
    }
    if (complete >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Aim the kill at a write in progress: wait (briefly) until a temp file exists.
  for (int i = 0; i < 1000 && count_temp_files(dir.path()) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  // Usually the kill lands mid-write and leaves a temp file; either way the
  // reopen must clean up exactly what the kill left.
  const size_t num_temp_at_kill = count_temp_files(dir.path());
  RecordProperty("temp_files_at_kill", static_cast<int>(num_temp_at_kill));

  std::unique_ptr<DiskTier> tier = open_tier(dir.path());
  const DiskTier::OpenReport& report = tier->open_report();
  EXPECT_EQ(report.num_temp_files_removed, static_cast<int64_t>(num_temp_at_kill));
  EXPECT_GE(report.num_chunks, 3);
  EXPECT_EQ(report.num_bad_files_removed, 0);  // renames are atomic: no partial chunk file
  EXPECT_EQ(count_temp_files(dir.path()), 0u);
  // Every indexed chunk is complete and correct; nothing else is on disk.
  int64_t num_found = 0;
  for (uint32_t i = 0; i < 10'000 && num_found < report.num_chunks; ++i) {
    KvChunkHandle expected = chunk_i(i);
    if (!tier->contains(expected->key)) continue;
    Result<KvChunkHandle> got = tier->get(expected->key);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    EXPECT_EQ((*got)->payload, expected->payload);
    ++num_found;
  }
  EXPECT_EQ(num_found, report.num_chunks);
  EXPECT_EQ(static_cast<int64_t>(files_under(dir.path()).size()), report.num_chunks);
  EXPECT_EQ(tier->stats().errors, 0);
}

}  // namespace
}  // namespace strata
