// DiskTier: the local-disk tier. Persistent: a restarted process that opens
// the same directory finds every complete chunk again.
//
// Layout: <dir>/<first 2 hex chars of key>/<64-char key hex>, each file one
// chunk_codec value (header + payload, XXH3 checksums). Writes go to a temp
// file ".tmp.<key hex>.<pid>.<n>" in the same subdirectory -> write all ->
// fsync -> rename over the final name -> fsync the subdirectory, so a crash
// at any point leaves either the complete old state or the complete new one
// plus, at worst, a temp file.
//
// open() rebuilds the index by scanning the directory: reads and validates
// each file's 80-byte header only (and its size), deletes files whose header
// is bad or whose name does not match their key (counted in OpenReport), and
// deletes leftover temp files. The initial LRU order is file mtime (oldest
// evicted first); afterwards access order (get and put touch a key).
//
// Symlinks and other non-regular files are never followed, read or written
// through. The directory given to open() may itself be a symlink (it is
// opened once and held as a descriptor); nothing under it is followed:
// subdirectories are opened relative to it with O_DIRECTORY | O_NOFOLLOW,
// chunk files relative to their subdirectory with O_NOFOLLOW | O_NONBLOCK and
// checked with fstat (S_ISREG) after the open; temp files are created with
// O_CREAT | O_EXCL (which never opens an existing name), and the rename
// replaces whatever sits at the final name without following it. A symlink,
// FIFO, socket or directory at a chunk or temp-file name is skipped and left
// in place (counted in OpenReport at open(), a miss in get(), not deleted by
// eviction or remove()); a put whose subdirectory name holds a symlink
// replaces the link (never its target) with a real directory.
//
// Bounded by payload+header bytes (capacity_bytes): a put that overflows
// evicts least recently used files first. Faults: ENOSPC / EACCES / EROFS /
// short writes make put() fail with a Status and leave nothing behind. get()
// reads the whole file and verifies header, key and payload checksum: a bad
// file is a miss (kNotFound), an error count, and is deleted.
//
// Thread-safety: all methods are thread-safe. One mutex guards the index and
// is never held across file I/O; concurrent puts of one key write distinct
// temp files and the renames are atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kvtier/kv_tier.h"

namespace strata {

// Test seam: makes the next writes of chunk files fail as the OS would.
struct DiskFault {
  int write_errno = 0;         // e.g. ENOSPC; 0 = no fault
  int num_failing_puts = 0;    // how many puts fail before writes succeed again
  bool is_short_write = true;  // write half of the bytes before failing
};

class DiskTier final : public KvTier {
 public:
  // What open() found in the directory.
  struct OpenReport {
    int64_t num_chunks = 0;              // valid chunk files indexed
    int64_t num_bad_files_removed = 0;   // bad header, size or name
    int64_t num_temp_files_removed = 0;  // leftovers of interrupted writes
    // Entries of the wrong type at our names (a symlink anywhere; a FIFO,
    // socket or directory at a chunk or temp-file name; a non-directory at
    // a subdirectory name): never followed or read, left in place.
    int64_t num_non_regular_skipped = 0;
  };

  // Creates `dir` if missing and rebuilds the index. Errors: the directory
  // cannot be created or read.
  static Result<std::unique_ptr<DiskTier>> open(const std::string& dir, size_t capacity_bytes,
                                                size_t max_payload_bytes);
  ~DiskTier() override;

  std::string_view name() const override { return "disk"; }
  bool contains(const ChunkKey& key) override;  // an index lookup, no I/O
  Status put(const KvChunkHandle& chunk) override;
  Result<KvChunkHandle> get(const ChunkKey& key) override;
  Status remove(const ChunkKey& key) override;
  TierStats stats() const override;

  const OpenReport& open_report() const { return open_report_; }
  const std::string& dir() const { return dir_; }
  // The path a chunk with `key` is stored at (tests corrupt files there).
  std::string chunk_path(const ChunkKey& key) const;
  void inject_fault_for_testing(const DiskFault& fault);

 private:
  struct Entry {
    uint64_t file_bytes = 0;
    std::list<ChunkKey>::iterator lru_pos;  // front = most recently used
  };

  // Takes ownership of dir_fd, an O_DIRECTORY descriptor of `dir`.
  DiskTier(std::string dir, int dir_fd, size_t capacity_bytes, size_t max_payload_bytes);
  Status scan();
  Status write_file(const KvChunk& chunk);
  // Unlinks the chunk file of `key` if it is a regular file (eviction,
  // remove()); returns the errno of a failing unlink, 0 otherwise.
  int unlink_chunk_file(const ChunkKey& key) const;
  // Drops `key` from the index (and counts nothing); the caller unlinks.
  void forget_locked(const ChunkKey& key);
  void insert_locked(const ChunkKey& key, uint64_t file_bytes);
  void publish_gauges_locked();
  // Consumes one injected fault; returns its errno or 0.
  int take_fault(bool* is_short_write);

  const std::string dir_;
  const int dir_fd_;  // owned; every path below is opened relative to it
  const size_t capacity_bytes_;
  const size_t max_payload_bytes_;
  OpenReport open_report_;
  std::atomic<uint64_t> temp_counter_{0};

  mutable std::mutex mu_;
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> entries_;
  std::list<ChunkKey> lru_;
  uint64_t stored_bytes_ = 0;  // file bytes (header + payload)
  DiskFault fault_;
  TierStatsRecorder recorder_;
};

}  // namespace strata
