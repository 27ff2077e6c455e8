#include "parallel/process_group.h"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// Tags of the steps' communicator (messages between one pair with one tag
// never overtake each other, so sequential exchanges match up in order).
constexpr int kTagControlHeader = 10;
constexpr int kTagControlPayload = 11;
constexpr int kTagReduce = 20;
constexpr int kTagPointToPoint = 30;
constexpr int kTagBeat = 40;
constexpr auto kBeatInterval = std::chrono::milliseconds(200);
constexpr int kHostChars = 64;
constexpr int kPlacementChars = 160;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return end != nullptr && *end == '\0' && n > 0 && n < INT_MAX ? static_cast<int>(n) : 0;
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(std::max(0, len)));
}

int checked_count(size_t bytes) {
  // Every message of a step is far below 2 GiB (a batch, activations of
  // max_batch_tokens rows, logits rows); a bigger one is a bug.
  if (bytes > static_cast<size_t>(INT_MAX)) {
    std::fprintf(stderr, "strata: parallel message of %zu bytes exceeds 2 GiB\n", bytes);
    std::abort();
  }
  return static_cast<int>(bytes);
}

// Whether process `pid` on this host has exited (gone, or a zombie its
// launcher has not reaped yet). A dead neighbour is seen within one poll
// instead of one heartbeat timeout.
bool has_exited(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  // "pid (comm) S ...": the state follows the last ')'.
  const char* close = std::strrchr(buf, ')');
  if (n == 0 || close == nullptr || close[1] == '\0' || close[2] == '\0') return false;
  return close[2] == 'Z' || close[2] == 'X';
}

}  // namespace

static void wait_requests(ProcessGroup& group, std::vector<MPI_Request>& requests,
                          const std::vector<int>& peers, const char* what, double timeout_s,
                          double* comm_seconds);

struct ProcessGroup::Mpi {
  MPI_Comm comm = MPI_COMM_NULL;       // the steps' messages
  MPI_Comm beat_comm = MPI_COMM_NULL;  // the heartbeat thread's
  std::vector<MPI_Request> sends;      // isend()s not yet waited for
  std::vector<int> send_peers;
};

int ProcessGroup::launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}) {
    if (int n = env_int(name); n > 0) return n;
  }
  return 1;
}

ProcessGroup::ProcessGroup(const ParallelOptions& options, ParallelLayout layout)
    : options_(options), layout_(layout), mpi_(std::make_unique<Mpi>()) {}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::create(const ParallelOptions& options) {
  ParallelLayout layout;
  layout.tensor_parallel_size = options.tensor_parallel_size;
  layout.pipeline_parallel_size = options.pipeline_parallel_size;
  const int launched = launched_world_size();
  if (launched == 1 && layout.world_size() == 1) return std::unique_ptr<ProcessGroup>();
  STRATA_RETURN_IF_ERROR(layout.validate(launched));

  // Bind first: MPI's progress threads and every later thread inherit it.
  const Placement placement = place_process(env_int("OMPI_COMM_WORLD_LOCAL_RANK"));
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return internal_error("parallel: MPI_Init_thread failed");
  }
  // Errors come back as codes; fail() turns them into one line and an exit.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    return internal_error(
        "parallel: this MPI library does not provide MPI_THREAD_MULTIPLE (the heartbeat thread "
        "needs it)");
  }
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &layout.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (Status s = layout.validate(world); !s) {
    MPI_Finalize();
    return s;
  }
  std::unique_ptr<ProcessGroup> group(new ProcessGroup(options, layout));
  MPI_Comm_dup(MPI_COMM_WORLD, &group->mpi_->comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &group->mpi_->beat_comm);
  MPI_Comm_set_errhandler(group->mpi_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(group->mpi_->beat_comm, MPI_ERRORS_RETURN);
  STRATA_RETURN_IF_ERROR(group->init_peers(placement));
  group->heartbeat_ = std::thread([g = group.get()] { g->heartbeat_loop(); });
  return group;
}

Status ProcessGroup::init_peers(const Placement& placement) {
  const int n = size();
  std::vector<int> pids(n, 0);
  const int pid = static_cast<int>(getpid());
  char host[kHostChars] = {};
  gethostname(host, sizeof(host) - 1);
  std::vector<char> hosts(static_cast<size_t>(n) * kHostChars, '\0');
  char where[kPlacementChars] = {};
  std::snprintf(where, sizeof(where), "%s", placement.description.c_str());
  std::vector<char> places(static_cast<size_t>(n) * kPlacementChars, '\0');
  if (MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, mpi_->comm) != MPI_SUCCESS ||
      MPI_Allgather(host, kHostChars, MPI_CHAR, hosts.data(), kHostChars, MPI_CHAR, mpi_->comm) !=
          MPI_SUCCESS ||
      MPI_Allgather(where, kPlacementChars, MPI_CHAR, places.data(), kPlacementChars, MPI_CHAR,
                    mpi_->comm) != MPI_SUCCESS) {
    return internal_error("parallel: exchanging rank identities failed");
  }
  peers_.resize(n);
  for (int r = 0; r < n; ++r) {
    peers_[r].pid = pids[r];
    const char* h = hosts.data() + static_cast<size_t>(r) * kHostChars;
    peers_[r].host.assign(h, strnlen(h, kHostChars - 1));
    const char* w = places.data() + static_cast<size_t>(r) * kPlacementChars;
    peers_[r].placement.assign(w, strnlen(w, kPlacementChars - 1));
  }
  return Status::ok();
}

ProcessGroup::~ProcessGroup() {
  // The failing thread exits the process within the grace.
  if (failing_) {
    for (;;) pause();
  }
  if (layout_.is_driver() && !stop_sent_) broadcast_control(ControlKind::kStop, {});
  // Nobody leaves before every rank has seen the stop, so no heartbeat
  // mistakes a peer that finished for one that died.
  std::vector<MPI_Request> barrier(1);
  MPI_Ibarrier(mpi_->comm, &barrier[0]);
  std::vector<int> everyone(1, 0);
  wait_requests(*this, barrier, everyone, "the shutdown", options_.collective_timeout_s,
                &comm_seconds_);
  stopping_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  for (MPI_Request& r : mpi_->sends) MPI_Request_free(&r);
  MPI_Comm_free(&mpi_->comm);
  MPI_Comm_free(&mpi_->beat_comm);
  MPI_Finalize();
}

std::string ProcessGroup::describe_rank(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(peers_.size())) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(peers_[rank].pid) + " on " +
         peers_[rank].host + ")";
}

std::vector<std::string> ProcessGroup::placement_lines() const {
  std::vector<std::string> lines;
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r) {
    ParallelLayout of = layout_;
    of.rank = r;
    lines.push_back(describe_rank(r) + ", shard " + std::to_string(of.tp_rank()) + " of stage " +
                    std::to_string(of.pp_rank()) + ": " + peers_[r].placement);
  }
  return lines;
}

void ProcessGroup::set_fault_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(hook_mutex_);
  fault_hook_ = std::move(hook);
}

void ProcessGroup::fault(const std::string& line) {
  if (!layout_.is_driver()) fail(line);
  if (!failing_.load()) std::thread([this, line] { fail(line); }).detach();
  throw GroupFailure(line);
}

void ProcessGroup::fail(const std::string& line) {
  if (failing_.exchange(true)) {
    // Another thread is already ending the process.
    for (;;) pause();
  }
  std::fprintf(stderr, "strata: %s; ending the group of %d ranks (this is rank %d)\n", line.c_str(),
               size(), rank());
  std::fflush(stderr);
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(hook_mutex_);
    hook = fault_hook_;
  }
  if (hook) hook();
  std::this_thread::sleep_for(std::chrono::duration<double>(options_.fault_grace_s));
  _exit(kExitGroupFault);
}

// Polls every request until all completed; names the first peer that has not
// answered when the deadline passes or MPI reports an error. Spins first
// (a peer inside a step answers within microseconds), then yields; the idle
// wait (no deadline) then sleeps, so an idle group costs no CPU.
static void wait_requests(ProcessGroup& group, std::vector<MPI_Request>& requests,
                          const std::vector<int>& peers, const char* what, double timeout_s,
                          double* comm_seconds) {
  const Clock::time_point t0 = Clock::now();
  size_t left = requests.size();
  std::vector<char> done(requests.size(), 0);
  for (int64_t spins = 0; left > 0; ++spins) {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (done[i]) continue;
      int flag = 0;
      if (int rc = MPI_Test(&requests[i], &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
        group.fault("MPI error with " + group.describe_rank(peers[i]) + " during " + what + ": " +
                    mpi_error_text(rc));
      }
      if (flag) {
        done[i] = 1;
        --left;
      }
    }
    if (left == 0) break;
    if (group.is_failing() && group.layout().is_driver()) {
      throw GroupFailure("the model-parallel group failed");
    }
    if (spins < 1000) continue;
    // Inside a step the peer is at most one layer behind: yield, never
    // sleep (a sleep would add its latency to each of 2 x layers
    // all-reduces). Only the idle wait for the next step sleeps.
    if (timeout_s > 0 || spins < 20000) {
      sched_yield();
    } else {
      usleep(spins < 40000 ? 20 : 200);
    }
    if (timeout_s > 0 && (spins & 63) == 0 && seconds_since(t0) > timeout_s) {
      for (size_t i = 0; i < requests.size(); ++i) {
        if (!done[i]) {
          char secs[32];
          std::snprintf(secs, sizeof(secs), "%.0f", timeout_s);
          group.fault(group.describe_rank(peers[i]) + " stopped responding: no answer within " +
                      secs + " s during " + what);
        }
      }
    }
  }
  *comm_seconds += seconds_since(t0);
}

void ProcessGroup::broadcast_control(ControlKind kind, const std::vector<uint8_t>& payload) {
  if (kind == ControlKind::kStop) stop_sent_ = true;
  const int64_t header[2] = {static_cast<int64_t>(kind), static_cast<int64_t>(payload.size())};
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  for (int r = 1; r < size(); ++r) {
    MPI_Request q;
    MPI_Isend(header, 2, MPI_INT64_T, r, kTagControlHeader, mpi_->comm, &q);
    requests.push_back(q);
    peers.push_back(r);
    if (!payload.empty()) {
      MPI_Isend(payload.data(), checked_count(payload.size()), MPI_BYTE, r, kTagControlPayload,
                mpi_->comm, &q);
      requests.push_back(q);
      peers.push_back(r);
    }
  }
  wait_requests(*this, requests, peers, "the step broadcast", options_.collective_timeout_s,
                &comm_seconds_);
}

ControlMessage ProcessGroup::receive_control() {
  int64_t header[2] = {0, 0};
  std::vector<MPI_Request> requests(1);
  MPI_Irecv(header, 2, MPI_INT64_T, 0, kTagControlHeader, mpi_->comm, &requests[0]);
  // Idle can last forever; a dead rank 0 is the heartbeat's to notice.
  wait_requests(*this, requests, {0}, "waiting for the next step", 0.0, &comm_seconds_);
  ControlMessage m;
  m.kind = static_cast<ControlKind>(header[0]);
  if (header[1] < 0 || header[1] > INT_MAX) fail("a control message from rank 0 is malformed");
  m.payload.resize(static_cast<size_t>(header[1]));
  if (!m.payload.empty()) {
    MPI_Irecv(m.payload.data(), static_cast<int>(m.payload.size()), MPI_BYTE, 0, kTagControlPayload,
              mpi_->comm, &requests[0]);
    wait_requests(*this, requests, {0}, "the step broadcast", options_.collective_timeout_s,
                  &comm_seconds_);
  }
  if (m.kind == ControlKind::kStop) stop_sent_ = true;
  return m;
}

void ProcessGroup::all_reduce_sum(float* data, int64_t n) {
  const int t = layout_.tensor_parallel_size;
  if (t == 1 || n == 0) return;
  const Clock::time_point t0 = Clock::now();
  const size_t count = static_cast<size_t>(n);
  reduce_scratch_.resize(count * static_cast<size_t>(t));
  const int me = layout_.tp_rank();
  const int stage = layout_.pp_rank();
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  const int bytes = checked_count(count * sizeof(float));
  for (int i = 0; i < t; ++i) {
    if (i == me) continue;
    const int peer = layout_.rank_of(stage, i);
    MPI_Request q;
    MPI_Irecv(reduce_scratch_.data() + count * static_cast<size_t>(i), bytes, MPI_BYTE, peer,
              kTagReduce, mpi_->comm, &q);
    requests.push_back(q);
    peers.push_back(peer);
    MPI_Isend(data, bytes, MPI_BYTE, peer, kTagReduce, mpi_->comm, &q);
    requests.push_back(q);
    peers.push_back(peer);
  }
  double unused = 0.0;
  wait_requests(*this, requests, peers, "the tensor-parallel all-reduce",
                options_.collective_timeout_s, &unused);
  // Rank order on every shard: ((p0 + p1) + p2) + ..., the same bits
  // everywhere.
  std::vector<const float*> parts(static_cast<size_t>(t));
  for (int i = 0; i < t; ++i) {
    parts[i] = i == me ? data : reduce_scratch_.data() + count * static_cast<size_t>(i);
  }
  for (size_t j = 0; j < count; ++j) {
    float acc = parts[0][j];
    for (int i = 1; i < t; ++i) acc += parts[i][j];
    data[j] = acc;
  }
  comm_seconds_ += seconds_since(t0);
}

void ProcessGroup::send(int dst_rank, const void* data, size_t bytes, const char* what) {
  std::vector<MPI_Request> requests(1);
  MPI_Isend(data, checked_count(bytes), MPI_BYTE, dst_rank, kTagPointToPoint, mpi_->comm,
            &requests[0]);
  wait_requests(*this, requests, {dst_rank}, what, options_.collective_timeout_s, &comm_seconds_);
}

void ProcessGroup::recv(int src_rank, void* data, size_t bytes, const char* what) {
  std::vector<MPI_Request> requests(1);
  MPI_Irecv(data, checked_count(bytes), MPI_BYTE, src_rank, kTagPointToPoint, mpi_->comm,
            &requests[0]);
  wait_requests(*this, requests, {src_rank}, what, options_.collective_timeout_s, &comm_seconds_);
}

void ProcessGroup::isend(int dst_rank, const void* data, size_t bytes, const char* what) {
  MPI_Request q;
  MPI_Isend(data, checked_count(bytes), MPI_BYTE, dst_rank, kTagPointToPoint, mpi_->comm, &q);
  mpi_->sends.push_back(q);
  mpi_->send_peers.push_back(dst_rank);
}

void ProcessGroup::wait_sends() {
  if (mpi_->sends.empty()) return;
  wait_requests(*this, mpi_->sends, mpi_->send_peers, "a pipeline send",
                options_.collective_timeout_s, &comm_seconds_);
  mpi_->sends.clear();
  mpi_->send_peers.clear();
}

double ProcessGroup::take_comm_seconds() {
  const double s = comm_seconds_;
  comm_seconds_ = 0.0;
  return s;
}

void ProcessGroup::heartbeat_loop() {
  const int n = size();
  const int me = rank();
  std::vector<MPI_Request> recvs(n, MPI_REQUEST_NULL);
  std::vector<MPI_Request> sends(n, MPI_REQUEST_NULL);
  std::vector<int> inbox(n, 0);
  const int beat = 1;
  std::vector<Clock::time_point> last_seen(n, Clock::now());
  std::vector<char> is_neighbour(n, 0);
  for (int r = 0; r < n; ++r) is_neighbour[r] = r != me && peers_[r].host == peers_[me].host;
  for (int r = 0; r < n; ++r) {
    if (r != me) MPI_Irecv(&inbox[r], 1, MPI_INT, r, kTagBeat, mpi_->beat_comm, &recvs[r]);
  }
  Clock::time_point next_beat = Clock::now();
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    if (now >= next_beat) {
      next_beat = now + kBeatInterval;
      for (int r = 0; r < n; ++r) {
        if (r == me) continue;
        int flag = 1;
        if (sends[r] != MPI_REQUEST_NULL) MPI_Test(&sends[r], &flag, MPI_STATUS_IGNORE);
        if (flag) MPI_Isend(&beat, 1, MPI_INT, r, kTagBeat, mpi_->beat_comm, &sends[r]);
      }
    }
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      int flag = 0;
      if (int rc = MPI_Test(&recvs[r], &flag, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
        if (!stop_sent_) fail("MPI error with " + describe_rank(r) + ": " + mpi_error_text(rc));
      }
      if (flag) {
        last_seen[r] = Clock::now();
        MPI_Irecv(&inbox[r], 1, MPI_INT, r, kTagBeat, mpi_->beat_comm, &recvs[r]);
      }
      // After the stop message peers may leave at any time.
      if (!stop_sent_ && is_neighbour[r] && has_exited(peers_[r].pid)) {
        fail(describe_rank(r) + " died");
      }
      const double silent = seconds_since(last_seen[r]);
      if (!stop_sent_ && silent > options_.heartbeat_timeout_s) {
        char secs[32];
        std::snprintf(secs, sizeof(secs), "%.1f", silent);
        fail(describe_rank(r) + " stopped responding: no heartbeat for " + secs + " s");
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    MPI_Cancel(&recvs[r]);
    MPI_Request_free(&recvs[r]);
    if (sends[r] != MPI_REQUEST_NULL) MPI_Request_free(&sends[r]);
  }
}

}  // namespace strata
