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
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
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

// The 2-hex-char subdirectory of a chunk and its file name (the key's hex).
std::string subdir_name(const std::string& hex) {
  return hex.substr(0, 2);
}

// Opens the subdirectory `name` of dir_fd without following a symlink there:
// returns the descriptor, or -1 with errno set (ENOTDIR - or ELOOP on some
// kernels - when the name holds a symlink or a non-directory, ENOENT when it
// is missing).
int open_subdir(int dir_fd, const std::string& name) {
  return ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// What opening a chunk file for reading found.
enum class OpenedAs { kRegular, kMissing, kNotRegular, kError };

// Opens `name` in dir_fd for reading if it is a regular file: O_NOFOLLOW
// refuses a symlink, O_NONBLOCK keeps a FIFO from blocking the open (and has
// no effect on a regular file), and fstat after the open rejects whatever
// else sits at the name (a FIFO, a directory, a device). On kRegular, *fd
// holds the file and *st its stat; otherwise *fd is -1 and, for kError,
// *err the errno.
OpenedAs open_regular_file(int dir_fd, const std::string& name, int* fd, struct stat* st,
                           int* err) {
  *fd = -1;
  *err = 0;
  const int f = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (f < 0) {
    const int e = errno;
    if (e == ENOENT) return OpenedAs::kMissing;
    // ELOOP: a symlink; ENXIO: a socket; ENOTDIR: the parent is not a directory.
    if (e == ELOOP || e == ENXIO || e == ENOTDIR) return OpenedAs::kNotRegular;
    *err = e;
    return OpenedAs::kError;
  }
  if (::fstat(f, st) != 0) {
    *err = errno;
    ::close(f);
    return OpenedAs::kError;
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(f);
    return OpenedAs::kNotRegular;
  }
  *fd = f;
  return OpenedAs::kRegular;
}

// Whether `name` in dir_fd is a regular file, without following a symlink.
bool is_regular_entry(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

// Whether `name` in dir_fd is a symlink (not followed).
bool is_symlink_entry(int dir_fd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

// The names in the directory dir_fd (which stays open), without "." and "..".
// Returns 0, or the errno when it cannot be listed.
int list_dir(int dir_fd, std::vector<std::string>* names) {
  const int dup_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return errno;
  DIR* d = ::fdopendir(dup_fd);  // owns dup_fd from here
  if (d == nullptr) {
    const int err = errno;
    ::close(dup_fd);
    return err;
  }
  ::rewinddir(d);  // the duplicate shares dir_fd's offset
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names->emplace_back(name);
  }
  ::closedir(d);
  return 0;
}

}  // namespace

DiskTier::DiskTier(std::string dir, int dir_fd, size_t capacity_bytes, size_t max_payload_bytes)
    : dir_(std::move(dir)),
      dir_fd_(dir_fd),
      capacity_bytes_(capacity_bytes),
      max_payload_bytes_(max_payload_bytes) {}

DiskTier::~DiskTier() {
  ::close(dir_fd_);
}

Result<std::unique_ptr<DiskTier>> DiskTier::open(const std::string& dir, size_t capacity_bytes,
                                                 size_t max_payload_bytes) {
  if (dir.empty()) return invalid_argument("disk tier: empty directory name (--kv-disk-dir)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return io_error("disk tier: cannot create " + dir + ": " + ec.message() +
                    " (check --kv-disk-dir)");
  }
  // The configured directory may be a symlink (the operator's choice);
  // nothing under it is followed.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return errno_status("cannot open", dir, errno);
  std::unique_ptr<DiskTier> tier(new DiskTier(dir, dir_fd, capacity_bytes, max_payload_bytes));
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
  std::vector<std::string> top_names;
  if (const int err = list_dir(dir_fd_, &top_names); err != 0) {
    return errno_status("cannot read", dir_, err);
  }

  for (const std::string& sub : top_names) {
    if (!is_hex_name(sub, 2)) continue;  // not ours: leave it alone
    Fd sub_fd(open_subdir(dir_fd_, sub));
    const int sub_err = sub_fd.get() < 0 ? errno : 0;
    if (sub_fd.get() < 0) {
      // A symlink or a non-directory at a subdirectory name: never followed.
      if (sub_err == ENOTDIR || sub_err == ELOOP) ++open_report_.num_non_regular_skipped;
      continue;
    }
    std::vector<std::string> names;
    if (list_dir(sub_fd.get(), &names) != 0) continue;  // unreadable: nothing of ours
    for (const std::string& name : names) {
      if (name.rfind(kTempPrefix, 0) == 0) {
        if (!is_regular_entry(sub_fd.get(), name)) {
          ++open_report_.num_non_regular_skipped;
        } else if (::unlinkat(sub_fd.get(), name.c_str(), 0) == 0) {
          ++open_report_.num_temp_files_removed;
        }
        continue;
      }
      if (!is_hex_name(name, 64)) continue;  // not ours: leave it alone
      int raw_fd = -1;
      int err = 0;
      struct stat st {};
      const OpenedAs opened = open_regular_file(sub_fd.get(), name, &raw_fd, &st, &err);
      Fd fd(raw_fd);
      if (opened == OpenedAs::kNotRegular) {
        ++open_report_.num_non_regular_skipped;
        continue;
      }
      if (opened != OpenedAs::kRegular) continue;  // vanished or unreadable
      bool is_valid = false;
      ChunkHeader header;
      uint8_t buf[kChunkHeaderBytes];
      if (read_all(fd.get(), buf, sizeof(buf), &err)) {
        Result<ChunkHeader> h = decode_chunk_header(buf, max_payload_bytes_);
        if (h && name.compare(0, 2, sub) == 0 && h->key.hex() == name &&
            static_cast<uint64_t>(st.st_size) == kChunkHeaderBytes + h->payload_bytes) {
          header = *h;
          is_valid = true;
        }
      }
      if (!is_valid) {
        // A regular file we opened: unlinkat never follows the name.
        if (::unlinkat(sub_fd.get(), name.c_str(), 0) == 0) ++open_report_.num_bad_files_removed;
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
    (void)unlink_chunk_file(victim);
    ++num_evicted;
  }
  if (num_evicted > 0) recorder_.record_evictions(num_evicted);
  open_report_.num_chunks = static_cast<int64_t>(entries_.size());
  publish_gauges_locked();
  return Status::ok();
}

int DiskTier::unlink_chunk_file(const ChunkKey& key) const {
  const std::string hex = key.hex();
  Fd sub_fd(open_subdir(dir_fd_, subdir_name(hex)));
  if (sub_fd.get() < 0) return 0;  // missing, or not our directory: nothing of ours
  if (!is_regular_entry(sub_fd.get(), hex)) return 0;
  // Between the check and the unlink the name may change; unlinkat removes
  // the entry itself and never follows it, so nothing outside is touched.
  if (::unlinkat(sub_fd.get(), hex.c_str(), 0) != 0 && errno != ENOENT) return errno;
  return 0;
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

Status DiskTier::write_file(const KvChunk& chunk) {
  const std::string hex = chunk.key.hex();
  const std::string sub = subdir_name(hex);
  const std::string sub_path = dir_ + "/" + sub;
  if (::mkdirat(dir_fd_, sub.c_str(), 0755) != 0 && errno != EEXIST) {
    return errno_status("cannot create", sub_path, errno);
  }
  Fd sub_fd(open_subdir(dir_fd_, sub));
  int sub_err = sub_fd.get() < 0 ? errno : 0;
  if ((sub_err == ENOTDIR || sub_err == ELOOP) && is_symlink_entry(dir_fd_, sub)) {
    // A symlink planted at our subdirectory name: replace the link (never
    // its target) with a real directory.
    if (::unlinkat(dir_fd_, sub.c_str(), 0) != 0 && errno != ENOENT) {
      return errno_status("cannot remove the symlink", sub_path, errno);
    }
    if (::mkdirat(dir_fd_, sub.c_str(), 0755) != 0 && errno != EEXIST) {
      return errno_status("cannot create", sub_path, errno);
    }
    sub_fd.reset(open_subdir(dir_fd_, sub));
    sub_err = sub_fd.get() < 0 ? errno : 0;
  }
  if (sub_fd.get() < 0) {
    return errno_status(sub_err == ENOTDIR ? "not a directory, cannot write into" : "cannot open",
                        sub_path, sub_err);
  }

  // O_CREAT | O_EXCL never opens an existing name, a symlink included; a name
  // taken by anything (a planted symlink, a leftover) moves on to the next.
  constexpr int kMaxTempAttempts = 8;
  std::string temp_name;
  int raw_fd = -1;
  int create_err = 0;
  for (int attempt = 0; attempt < kMaxTempAttempts && raw_fd < 0; ++attempt) {
    temp_name = std::string(kTempPrefix) + hex + "." + std::to_string(::getpid()) + "." +
                std::to_string(temp_counter_.fetch_add(1));
    raw_fd = ::openat(sub_fd.get(), temp_name.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    create_err = raw_fd < 0 ? errno : 0;
    if (create_err != 0 && create_err != EEXIST) break;
  }
  const std::string temp_path = sub_path + "/" + temp_name;
  if (raw_fd < 0) return errno_status("cannot create", temp_path, create_err);
  Fd fd(raw_fd);

  auto fail = [&](std::string_view what, int err) {
    ::close(fd.release());
    ::unlinkat(sub_fd.get(), temp_name.c_str(), 0);
    return errno_status(what, temp_path, err);
  };
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail("cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return fail("not a regular file", EINVAL);  // cannot happen
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
    ::unlinkat(sub_fd.get(), temp_name.c_str(), 0);
    return errno_status("close", temp_path, err);
  }
  // rename replaces the final name itself (a planted symlink there included)
  // and never follows it.
  if (::renameat(sub_fd.get(), temp_name.c_str(), sub_fd.get(), hex.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(sub_fd.get(), temp_name.c_str(), 0);
    return errno_status("rename", temp_path, err);
  }
  // Make the rename itself durable.
  (void)::fsync(sub_fd.get());
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
  if (Status s = write_file(*chunk); !s.is_ok()) {
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
    (void)unlink_chunk_file(victim);
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
  const std::string hex = key.hex();
  const std::string path = chunk_path(key);
  Fd sub_fd(open_subdir(dir_fd_, subdir_name(hex)));
  const int sub_err = sub_fd.get() < 0 ? errno : 0;
  // Not a regular file we wrote (a symlink, a FIFO, a directory at the name
  // or at its subdirectory's): never read, left in place, a miss.
  auto skip_foreign = [&]() -> Status {
    {
      std::lock_guard<std::mutex> lock(mu_);
      forget_locked(key);
      publish_gauges_locked();
    }
    recorder_.record_error();
    recorder_.record_miss(timer.seconds());
    return not_found("disk tier: " + path + " is not a regular file (a symlink?); not read");
  };
  // A defective file: a miss, an error, and the file goes.
  auto drop_bad = [&](const std::string& why) -> Status {
    {
      std::lock_guard<std::mutex> lock(mu_);
      forget_locked(key);
      // The file was opened as a regular file; unlinkat never follows the name.
      ::unlinkat(sub_fd.get(), hex.c_str(), 0);
      publish_gauges_locked();
    }
    recorder_.record_error();
    recorder_.record_miss(timer.seconds());
    return not_found("disk tier: " + path + ": " + why + "; file removed");
  };
  auto vanished = [&]() -> Status {  // deleted behind our back: forget it
    std::lock_guard<std::mutex> lock(mu_);
    forget_locked(key);
    publish_gauges_locked();
    recorder_.record_miss(timer.seconds());
    return not_found("disk tier: " + path + " vanished");
  };

  if (sub_fd.get() < 0) {
    if (sub_err == ENOENT) return vanished();
    if (sub_err == ELOOP || sub_err == ENOTDIR) return skip_foreign();
    recorder_.record_error();
    return errno_status("cannot open", dir_ + "/" + subdir_name(hex), sub_err);
  }
  int raw_fd = -1;
  int open_err = 0;
  struct stat st {};
  const OpenedAs opened = open_regular_file(sub_fd.get(), hex, &raw_fd, &st, &open_err);
  Fd fd(raw_fd);
  switch (opened) {
    case OpenedAs::kRegular:
      break;
    case OpenedAs::kMissing:
      return vanished();
    case OpenedAs::kNotRegular:
      return skip_foreign();
    case OpenedAs::kError:
      recorder_.record_error();
      return errno_status("cannot open", path, open_err);
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
  if (const int err = unlink_chunk_file(key); err != 0) {
    publish_gauges_locked();
    recorder_.record_error();
    return errno_status("cannot remove", chunk_path(key), err);
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
