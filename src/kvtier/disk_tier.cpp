#include "kvtier/disk_tier.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "kvtier/chunk_codec.h"

namespace strata {
namespace {

constexpr std::string_view kTempPrefix = ".tmp.";

Status errno_status(std::string_view what, const std::string& path, int err) {
  std::string msg = "disk tier: " + std::string(what) + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) {
    return Status(StatusCode::kResourceExhausted, msg + " (lower --kv-disk-bytes)");
  }
  return io_error(std::move(msg));
}

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Writes all `n` bytes or returns the errno of the failing write.
int write_all(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

// Reads exactly `n` bytes; returns false on a short read (EOF), sets *err on
// a read error.
bool read_all(int fd, uint8_t* data, size_t n, int* err) {
  *err = 0;
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (r == 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool is_hex_name(std::string_view name, size_t len) {
  if (name.size() != len) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

int64_t mtime_ns(const struct stat& st) {
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

DiskTier::DiskTier(std::string dir, size_t capacity_bytes, size_t max_payload_bytes)
    : dir_(std::move(dir)),
      capacity_bytes_(capacity_bytes),
      max_payload_bytes_(max_payload_bytes) {}

DiskTier::~DiskTier() = default;

Result<std::unique_ptr<DiskTier>> DiskTier::open(const std::string& dir, size_t capacity_bytes,
                                                 size_t max_payload_bytes) {
  if (dir.empty()) return invalid_argument("disk tier: empty directory name (--kv-disk-dir)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return io_error("disk tier: cannot create " + dir + ": " + ec.message() +
                    " (check --kv-disk-dir)");
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(dir, capacity_bytes, max_payload_bytes));
  STRATA_RETURN_IF_ERROR(tier->scan());
  return tier;
}

std::string DiskTier::chunk_path(const ChunkKey& key) const {
  const std::string hex = key.hex();
  return dir_ + "/" + hex.substr(0, 2) + "/" + hex;
}

Status DiskTier::scan() {
  struct Found {
    ChunkKey key;
    uint64_t file_bytes;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  DIR* top = ::opendir(dir_.c_str());
  if (top == nullptr) return errno_status("cannot read", dir_, errno);
  std::vector<std::string> subdirs;
  while (const dirent* e = ::readdir(top)) {
    if (is_hex_name(e->d_name, 2)) subdirs.emplace_back(e->d_name);
  }
  ::closedir(top);

  for (const std::string& sub : subdirs) {
    const std::string sub_path = dir_ + "/" + sub;
    DIR* d = ::opendir(sub_path.c_str());
    if (d == nullptr) continue;  // not a directory, or unreadable: nothing of ours
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
    ::closedir(d);
    for (const std::string& name : names) {
      const std::string path = sub_path + "/" + name;
      if (name.rfind(kTempPrefix, 0) == 0) {
        if (::unlink(path.c_str()) == 0) ++open_report_.num_temp_files_removed;
        continue;
      }
      if (!is_hex_name(name, 64)) continue;  // not ours: leave it alone
      bool is_valid = false;
      struct stat st {};
      ChunkHeader header;
      Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd.get() >= 0 && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
        uint8_t buf[kChunkHeaderBytes];
        int err = 0;
        if (read_all(fd.get(), buf, sizeof(buf), &err)) {
          Result<ChunkHeader> h = decode_chunk_header(buf, max_payload_bytes_);
          if (h && name.compare(0, 2, sub) == 0 && h->key.hex() == name &&
              static_cast<uint64_t>(st.st_size) == kChunkHeaderBytes + h->payload_bytes) {
            header = *h;
            is_valid = true;
          }
        }
      }
      if (!is_valid) {
        if (::unlink(path.c_str()) == 0) ++open_report_.num_bad_files_removed;
        continue;
      }
      found.push_back({header.key, static_cast<uint64_t>(st.st_size), mtime_ns(st)});
    }
  }

  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.mtime_ns < b.mtime_ns; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) insert_locked(f.key, f.file_bytes);  // oldest ends up last
  int64_t num_evicted = 0;
  while (stored_bytes_ > capacity_bytes_ && !lru_.empty()) {
    const ChunkKey victim = lru_.back();
    forget_locked(victim);
    ::unlink(chunk_path(victim).c_str());
    ++num_evicted;
  }
  if (num_evicted > 0) recorder_.record_evictions(num_evicted);
  open_report_.num_chunks = static_cast<int64_t>(entries_.size());
  publish_gauges_locked();
  return Status::ok();
}

bool DiskTier::contains(const ChunkKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(key) != 0;
}

void DiskTier::inject_fault_for_testing(const DiskFault& fault) {
  std::lock_guard<std::mutex> lock(mu_);
  fault_ = fault;
}

int DiskTier::take_fault(bool* is_short_write) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fault_.write_errno == 0 || fault_.num_failing_puts <= 0) return 0;
  --fault_.num_failing_puts;
  *is_short_write = fault_.is_short_write;
  return fault_.write_errno;
}

Status DiskTier::write_file(const KvChunk& chunk, const std::string& final_path) {
  const std::string hex = chunk.key.hex();
  const std::string sub_path = dir_ + "/" + hex.substr(0, 2);
  if (::mkdir(sub_path.c_str(), 0755) != 0 && errno != EEXIST) {
    return errno_status("cannot create", sub_path, errno);
  }
  const std::string temp_path = sub_path + "/" + std::string(kTempPrefix) + hex + "." +
                                std::to_string(::getpid()) + "." +
                                std::to_string(temp_counter_.fetch_add(1));
  Fd fd(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return errno_status("cannot create", temp_path, errno);

  auto fail = [&](std::string_view what, int err) {
    ::close(fd.release());
    ::unlink(temp_path.c_str());
    return errno_status(what, temp_path, err);
  };
  const std::array<uint8_t, kChunkHeaderBytes> header = encode_chunk_header(chunk);
  bool is_short_write = false;
  if (const int injected = take_fault(&is_short_write); injected != 0) {
    // As the OS would fail: possibly after part of the bytes reached the file.
    if (is_short_write) (void)write_all(fd.get(), header.data(), header.size() / 2);
    return fail("write", injected);
  }
  if (int err = write_all(fd.get(), header.data(), header.size()); err != 0) {
    return fail("write", err);
  }
  if (int err = write_all(fd.get(), chunk.payload.data(), chunk.payload.size()); err != 0) {
    return fail("write", err);
  }
  if (::fsync(fd.get()) != 0) return fail("fsync", errno);
  if (::close(fd.release()) != 0) {
    const int err = errno;
    ::unlink(temp_path.c_str());
    return errno_status("close", temp_path, err);
  }
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path.c_str());
    return errno_status("rename", temp_path, err);
  }
  // Make the rename itself durable.
  Fd dir_fd(::open(sub_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) (void)::fsync(dir_fd.get());
  return Status::ok();
}

Status DiskTier::put(const KvChunkHandle& chunk) {
  if (chunk == nullptr) return invalid_argument("disk tier: null chunk");
  if (chunk->payload.size() > max_payload_bytes_) {
    return invalid_argument("disk tier: chunk payload of " + std::to_string(chunk->payload.size()) +
                            " bytes exceeds the limit " + std::to_string(max_payload_bytes_));
  }
  const uint64_t file_bytes = kChunkHeaderBytes + chunk->payload.size();
  if (file_bytes > capacity_bytes_) {
    return invalid_argument("disk tier: chunk file of " + std::to_string(file_bytes) +
                            " bytes exceeds the capacity " + std::to_string(capacity_bytes_) +
                            " (raise --kv-disk-bytes)");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(chunk->key);
    if (it != entries_.end()) {  // idempotent
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      return Status::ok();
    }
  }
  const TierTimer timer;
  const std::string path = chunk_path(chunk->key);
  if (Status s = write_file(*chunk, path); !s.is_ok()) {
    recorder_.record_error();
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(chunk->key) == 0) {
    insert_locked(chunk->key, file_bytes);
    recorder_.record_put(static_cast<int64_t>(chunk->payload.size()), timer.seconds());
  }
  int64_t num_evicted = 0;
  while (stored_bytes_ > capacity_bytes_ && lru_.size() > 1) {
    const ChunkKey victim = lru_.back();
    forget_locked(victim);
    ::unlink(chunk_path(victim).c_str());
    ++num_evicted;
  }
  if (num_evicted > 0) recorder_.record_evictions(num_evicted);
  publish_gauges_locked();
  return Status::ok();
}

Result<KvChunkHandle> DiskTier::get(const ChunkKey& key) {
  const TierTimer timer;
  uint64_t expected_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      recorder_.record_miss(timer.seconds());
      return not_found("disk tier: no chunk " + key.hex());
    }
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    expected_bytes = it->second.file_bytes;
  }
  const std::string path = chunk_path(key);
  // A defective file: a miss, an error, and the file goes.
  auto drop_bad = [&](const std::string& why) -> Status {
    {
      std::lock_guard<std::mutex> lock(mu_);
      forget_locked(key);
      ::unlink(path.c_str());
      publish_gauges_locked();
    }
    recorder_.record_error();
    recorder_.record_miss(timer.seconds());
    return not_found("disk tier: " + path + ": " + why + "; file removed");
  };

  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) {  // deleted behind our back: forget it
      std::lock_guard<std::mutex> lock(mu_);
      forget_locked(key);
      publish_gauges_locked();
      recorder_.record_miss(timer.seconds());
      return not_found("disk tier: " + path + " vanished");
    }
    recorder_.record_error();
    return errno_status("cannot open", path, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    recorder_.record_error();
    return errno_status("cannot stat", path, errno);
  }
  if (static_cast<uint64_t>(st.st_size) != expected_bytes) {
    return drop_bad("size " + std::to_string(st.st_size) + " bytes, expected " +
                    std::to_string(expected_bytes));
  }
  uint8_t header_bytes[kChunkHeaderBytes];
  int err = 0;
  if (!read_all(fd.get(), header_bytes, sizeof(header_bytes), &err)) {
    if (err != 0) {
      recorder_.record_error();
      return errno_status("read", path, err);
    }
    return drop_bad("short read of the header");
  }
  Result<ChunkHeader> header = decode_chunk_header(header_bytes, max_payload_bytes_);
  if (!header) return drop_bad(header.status().message());
  if (header->key != key) return drop_bad("the file holds a different chunk key");
  if (kChunkHeaderBytes + header->payload_bytes != expected_bytes) {
    return drop_bad("payload size does not match the file size");
  }
  auto chunk = std::make_shared<KvChunk>();
  chunk->key = key;
  chunk->num_tokens = header->num_tokens;
  chunk->payload.resize(header->payload_bytes);
  if (!read_all(fd.get(), chunk->payload.data(), chunk->payload.size(), &err)) {
    if (err != 0) {
      recorder_.record_error();
      return errno_status("read", path, err);
    }
    return drop_bad("short read of the payload");
  }
  if (Status s = verify_chunk_payload(*header, chunk->payload); !s.is_ok()) {
    return drop_bad(s.message());
  }
  // Record the access in the file's mtime, so the LRU order survives a restart.
  (void)::futimens(fd.get(), nullptr);
  recorder_.record_hit(static_cast<int64_t>(chunk->payload.size()), timer.seconds());
  return KvChunkHandle(std::move(chunk));
}

Status DiskTier::remove(const ChunkKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  forget_locked(key);
  const std::string path = chunk_path(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    const int err = errno;
    publish_gauges_locked();
    recorder_.record_error();
    return errno_status("cannot remove", path, err);
  }
  publish_gauges_locked();
  return Status::ok();
}

TierStats DiskTier::stats() const {
  return recorder_.snapshot();
}

void DiskTier::forget_locked(const ChunkKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  stored_bytes_ -= it->second.file_bytes;
  lru_.erase(it->second.lru_pos);
  entries_.erase(it);
}

void DiskTier::insert_locked(const ChunkKey& key, uint64_t file_bytes) {
  lru_.push_front(key);
  entries_.emplace(key, Entry{file_bytes, lru_.begin()});
  stored_bytes_ += file_bytes;
}

void DiskTier::publish_gauges_locked() {
  recorder_.set_stored(static_cast<int64_t>(entries_.size()), static_cast<int64_t>(stored_bytes_));
}

}  // namespace strata
