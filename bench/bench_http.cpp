// bench_http: requests/s and latency of the HTTP front, strata_http against
// the old cpp-httplib front, side by side in one run on the same machine.
//
// Two handlers per front:
//   trivial  GET /trivial -> 200 "ok"
//   sse      GET /sse -> an SSE stream of --frames events (~150 bytes, an
//            OpenAI chunk's size). The events come from one "engine" thread
//            that, pass after pass, appends the next event to every open
//            stream, as the engine thread does with one token per step. On
//            strata_http it calls HttpResponse::write(); on cpp-httplib it
//            pushes to the stream's queue, which the connection's thread
//            waits on and writes out (as the old OpenAiServer did).
// The load generator is one epoll thread holding --connections keep-alive
// connections, each sending its next request as soon as the previous
// response ended (closed loop). Latency is request sent -> last byte.
// The server and the load share the machine's cores: compare the fronts
// with each other, not with a network benchmark.
//
//   bench_http [--seconds 3] [--frames 32] [--connections 64,256]
//              [--front strata,httplib] [--io-threads 2] [--httplib-threads 512]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"

#ifdef STRATA_BENCH_HAS_HTTPLIB
#include <httplib.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using strata::http::HttpRequest;
using strata::http::ResponsePtr;

std::string event_frame(int i) {
  std::string json =
      "{\"id\":\"cmpl-0123456789abcdef\",\"object\":\"text_completion\",\"created\":1700000000,"
      "\"model\":\"strata\",\"choices\":[{\"index\":0,\"text\":\" tok" +
      std::to_string(i) + "\",\"logprobs\":null,\"finish_reason\":null}]}";
  return strata::http::sse_event(json);
}

// ---------------------------------------------------------------- the "engine"

// One thread that appends one event per pass to every open stream.
class FrameSource {
 public:
  struct Stream {
    std::function<bool(const std::string&)> write;  // false: gone
    std::function<void()> finish;
    int sent = 0;
  };
  explicit FrameSource(int num_frames) : num_frames_(num_frames) {
    for (int i = 0; i < num_frames; ++i) frames_.push_back(event_frame(i));
    thread_ = std::thread([this] { loop(); });
  }
  ~FrameSource() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void add(Stream s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      incoming_.push_back(std::move(s));
    }
    cv_.notify_all();
  }

 private:
  void loop() {
    std::vector<Stream> open;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return is_stopping_ || !incoming_.empty() || !open.empty(); });
        if (is_stopping_) return;
        for (Stream& s : incoming_) open.push_back(std::move(s));
        incoming_.clear();
      }
      // One "step": the next event for every stream.
      for (Stream& s : open) {
        if (!s.write(frames_[s.sent]))
          s.sent = num_frames_;
        else if (++s.sent == num_frames_)
          s.finish();
      }
      open.erase(std::remove_if(open.begin(), open.end(),
                                [&](const Stream& s) { return s.sent >= num_frames_; }),
                 open.end());
    }
  }
  const int num_frames_;
  std::vector<std::string> frames_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Stream> incoming_;
  bool is_stopping_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------- fronts

class Front {
 public:
  virtual ~Front() = default;
  virtual uint16_t port() const = 0;
};

class StrataFront : public Front {
 public:
  StrataFront(int io_threads, FrameSource* source) {
    strata::http::Router r;
    r.add("GET", "/trivial",
          [](HttpRequest, ResponsePtr res) { res->send(200, "text/plain", "ok"); });
    r.add("GET", "/sse", [source](HttpRequest, ResponsePtr res) {
      res->start_sse();
      source->add(FrameSource::Stream{[res](const std::string& f) { return res->write(f); },
                                      [res] { res->finish(); }});
    });
    strata::http::HttpServerOptions o;
    o.port = 0;
    o.num_io_threads = io_threads;
    server_ = std::make_unique<strata::http::HttpServer>(o, std::move(r));
    if (!server_->bind().is_ok() || !server_->start().is_ok()) std::abort();
  }
  ~StrataFront() override { server_->stop(); }
  uint16_t port() const override { return server_->port(); }

 private:
  std::unique_ptr<strata::http::HttpServer> server_;
};

#ifdef STRATA_BENCH_HAS_HTTPLIB
class HttplibFront : public Front {
 public:
  HttplibFront(int threads, FrameSource* source) {
    server_.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    server_.set_keep_alive_max_count(1 << 30);
    server_.set_keep_alive_timeout(30);
    server_.set_tcp_nodelay(true);
    server_.Get("/trivial", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    server_.Get("/sse", [source](const httplib::Request&, httplib::Response& res) {
      // The engine pushes to this queue; the connection's thread writes.
      struct Queue {
        std::mutex mu;
        std::condition_variable cv;
        std::deque<std::string> frames;
        bool is_done = false;
        bool is_gone = false;
      };
      auto q = std::make_shared<Queue>();
      source->add(FrameSource::Stream{[q](const std::string& f) {
                                        std::lock_guard<std::mutex> lock(q->mu);
                                        if (q->is_gone) return false;
                                        q->frames.push_back(f);
                                        q->cv.notify_one();
                                        return true;
                                      },
                                      [q] {
                                        std::lock_guard<std::mutex> lock(q->mu);
                                        q->is_done = true;
                                        q->cv.notify_one();
                                      }});
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider("text/event-stream", [q](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(q->mu);
        for (;;) {
          q->cv.wait(lock, [&] { return !q->frames.empty() || q->is_done; });
          while (!q->frames.empty()) {
            std::string f = std::move(q->frames.front());
            q->frames.pop_front();
            lock.unlock();
            const bool ok = sink.write(f.data(), f.size());
            lock.lock();
            if (!ok) {
              q->is_gone = true;
              return false;
            }
          }
          if (q->is_done) {
            sink.done();
            return true;
          }
        }
      });
    });
    port_ = static_cast<uint16_t>(server_.bind_to_any_port("127.0.0.1"));
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~HttplibFront() override {
    server_.stop();
    thread_.join();
  }
  uint16_t port() const override { return port_; }

 private:
  httplib::Server server_;
  uint16_t port_ = 0;
  std::thread thread_;
};
#endif

// ---------------------------------------------------------------- load

struct LoadResult {
  double requests_per_s = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int64_t num_errors = 0;
};

class Load {
 public:
  Load(uint16_t port, int num_connections, bool is_sse)
      : request_(is_sse ? "GET /sse HTTP/1.1\r\nHost: b\r\n\r\n"
                        : "GET /trivial HTTP/1.1\r\nHost: b\r\n\r\n"),
        is_sse_(is_sse),
        port_(port) {
    epfd_ = epoll_create1(0);
    conns_.resize(static_cast<size_t>(num_connections));
    for (size_t i = 0; i < conns_.size(); ++i) connect_one(i);
  }

  // (Re)opens connection i and registers it.
  void connect_one(size_t i) {
    Conn& c = conns_[i];
    if (c.fd >= 0) ::close(c.fd);
    c.in.clear();
    c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      std::perror("bench_http: connect");
      std::exit(1);
    }
    const int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, c.fd, &ev);
  }
  ~Load() {
    for (Conn& c : conns_) ::close(c.fd);
    ::close(epfd_);
  }

  LoadResult run(double warmup_s, double seconds) {
    for (Conn& c : conns_) send_request(c);
    const Clock::time_point t0 = Clock::now();
    const Clock::time_point measure_from =
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup_s));
    const Clock::time_point end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(seconds));
    std::vector<double> latencies_ms;
    int64_t errors = 0;
    std::vector<epoll_event> events(conns_.size());
    char buf[65536];
    while (Clock::now() < end) {
      const int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), 100);
      for (int k = 0; k < n; ++k) {
        const size_t i = events[k].data.u64;
        Conn& c = conns_[i];
        bool is_lost = false;
        for (;;) {
          const ssize_t got = ::recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
          if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
          if (got <= 0) {
            is_lost = true;
            break;
          }
          c.in.append(buf, static_cast<size_t>(got));
        }
        if (is_lost) {
          // The server closed or reset it: counted, reopened, resent.
          ++errors;
          connect_one(i);
          send_request(c);
          continue;
        }
        if (is_complete(c)) {
          const Clock::time_point now = Clock::now();
          if (c.sent_at >= measure_from && now <= end) {
            latencies_ms.push_back(
                std::chrono::duration<double, std::milli>(now - c.sent_at).count());
          }
          c.in.clear();
          send_request(c);
        }
      }
    }
    LoadResult r;
    std::sort(latencies_ms.begin(), latencies_ms.end());
    r.requests_per_s = static_cast<double>(latencies_ms.size()) / seconds;
    if (!latencies_ms.empty()) {
      r.p50_ms = latencies_ms[latencies_ms.size() / 2];
      r.p99_ms = latencies_ms[std::min(latencies_ms.size() - 1, latencies_ms.size() * 99 / 100)];
    }
    r.num_errors = errors;
    return r;
  }

 private:
  struct Conn {
    int fd = -1;
    std::string in;
    Clock::time_point sent_at;
  };
  void send_request(Conn& c) {
    c.sent_at = Clock::now();
    if (::send(c.fd, request_.data(), request_.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request_.size())) {
      std::perror("send");
      std::exit(1);
    }
  }
  bool is_complete(const Conn& c) const {
    const size_t head_end = c.in.find("\r\n\r\n");
    if (head_end == std::string::npos) return false;
    if (is_sse_) {
      constexpr std::string_view kLast = "\r\n0\r\n\r\n";
      return c.in.size() >= kLast.size() &&
             c.in.compare(c.in.size() - kLast.size(), kLast.size(), kLast) == 0;
    }
    const size_t cl = c.in.find("Content-Length: ");
    if (cl == std::string::npos || cl > head_end) return false;
    const size_t len = static_cast<size_t>(std::atoll(c.in.c_str() + cl + 16));
    return c.in.size() >= head_end + 4 + len;
  }

  const std::string request_;
  const bool is_sse_;
  const uint16_t port_;
  int epfd_ = -1;
  std::vector<Conn> conns_;
};

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_http: the HTTP front under load, strata_http vs cpp-httplib"};
  double seconds = 3;
  int frames = 32;
  int io_threads = 2;
  int httplib_threads = 512;
  std::vector<int> connections = {64, 256};
  std::vector<std::string> fronts = {"strata", "httplib"};
  app.add_option("--seconds", seconds, "measured seconds per case")->check(CLI::PositiveNumber);
  app.add_option("--frames", frames, "SSE events per stream")->check(CLI::Range(1, 100000));
  app.add_option("--connections", connections, "concurrent connections")->delimiter(',');
  app.add_option("--front", fronts, "strata and/or httplib")->delimiter(',');
  app.add_option("--io-threads", io_threads, "strata_http I/O threads")->check(CLI::Range(1, 64));
  app.add_option("--httplib-threads", httplib_threads, "cpp-httplib pool threads (old default 512)")
      ->check(CLI::Range(1, 4096));
  CLI11_PARSE(app, argc, argv);
  if (strata::http::raise_open_file_limit(4096 + 4 * 256).is_ok() == false) {
    std::fprintf(stderr, "bench_http: cannot raise the open-file limit\n");
  }

  std::printf("bench_http: %s, %u hardware threads; %.1f s per case, SSE %d events\n",
              cpu_name().c_str(), std::thread::hardware_concurrency(), seconds, frames);
  std::printf("%-8s %-8s %6s %12s %12s %10s %10s %8s\n", "front", "handler", "conns", "req/s",
              "events/s", "p50 ms", "p99 ms", "errors");
  for (const std::string& front_name : fronts) {
    for (const bool is_sse : {false, true}) {
      for (const int n : connections) {
        FrameSource source(frames);
        std::unique_ptr<Front> front;
        if (front_name == "strata") {
          front = std::make_unique<StrataFront>(io_threads, &source);
        } else if (front_name == "httplib") {
#ifdef STRATA_BENCH_HAS_HTTPLIB
          front = std::make_unique<HttplibFront>(httplib_threads, &source);
#else
          std::fprintf(stderr, "bench_http: built without cpp-httplib\n");
          return 1;
#endif
        } else {
          std::fprintf(stderr, "bench_http: unknown front %s\n", front_name.c_str());
          return 1;
        }
        LoadResult r;
        {
          Load load(front->port(), n, is_sse);
          r = load.run(0.5, seconds);
        }
        std::printf("%-8s %-8s %6d %12.0f %12.0f %10.2f %10.2f %8lld\n", front_name.c_str(),
                    is_sse ? "sse" : "trivial", n, r.requests_per_s,
                    is_sse ? r.requests_per_s * frames : 0.0, r.p50_ms, r.p99_ms,
                    static_cast<long long>(r.num_errors));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
