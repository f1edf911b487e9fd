#include "sinks/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "sinks/microhttpd_api.h"

namespace exitscope {

struct MetricsHttpServer::State {
  const MicrohttpdApi* mhd = nullptr;  // loaded by Start
  ExpositionFn render;
  MHD_Daemon* daemon = nullptr;
  std::atomic<uint64_t> requests{0};
  // Connections by fd with the time they opened, for the watchdog. An entry leaves in the library's
  // CLOSED notification, which comes before it closes the fd: the watchdog never shuts a reused fd.
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  struct Conn {
    std::chrono::steady_clock::time_point opened, waiting_since;  // the latter: open or last answer
    std::string client;                                           // address without port
    bool evicted = false;
    bool answering = false;  // its request is in: being answered, never evicted
    bool started = false;    // its request line came, its headers not yet: a slow client's mark
  };
  std::map<int, Conn> open;
  std::map<std::string, unsigned> per_client;  // connections not evicted, by address
  unsigned live = 0;                           // all of those
  uint64_t evictions = 0;
  std::thread watchdog;
};

bool RequestHeadWaiting(int fd) {
  // What the library has not read yet; a head longer than it may hold is refused anyway (431).
  std::array<char, kHttpConnectionMemory> buf;
  ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return false;
  std::string_view pending(buf.data(), static_cast<size_t>(n));
  return pending.find("\r\n\r\n") != std::string_view::npos || pending.find("\n\n") != std::string_view::npos;
}

namespace {

constexpr std::string_view kIndex =
    "<html><head><title>exitscope</title></head><body><h1>exitscope serve</h1>"
    "<p><a href=\"/metrics\">/metrics</a>: VM exits of this host (Prometheus text or OpenMetrics)</p>"
    "</body></html>\n";

MHD_Result Reply(const MicrohttpdApi& mhd, MHD_Connection* c, unsigned status, std::string_view body,
                 std::string_view type, const char* allow = nullptr) {
  MHD_Response* r = mhd.create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  mhd.add_response_header(r, "Content-Type", std::string(type).c_str());
  if (allow) mhd.add_response_header(r, "Allow", allow);
  MHD_Result ok = mhd.queue_response(c, status, r);
  mhd.destroy_response(r);
  return ok;
}

// One marker per request: the first call only says "go on", later ones carry a body to drop.
int kRequestSeen, kRequestHadBody;

MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                     size_t* upload_size, void** con_cls) {
  auto* st = static_cast<MetricsHttpServer::State*>(cls);
  const MicrohttpdApi& mhd = *st->mhd;
  if (*con_cls == nullptr) {
    *con_cls = &kRequestSeen;
    if (const MHD_ConnectionInfo* info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)) {
      std::lock_guard<std::mutex> lock(st->mu);
      if (auto it = st->open.find(info->connect_fd); it != st->open.end()) it->second.answering = true;
    }
    return MHD_YES;
  }
  if (*upload_size != 0) {  // a GET with a body: read and dropped (the deadline bounds its time)
    *upload_size = 0;
    *con_cls = &kRequestHadBody;
    return MHD_YES;
  }
  st->requests++;
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0)
    return Reply(mhd, c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", kText, "GET");
  if (*con_cls == &kRequestHadBody) return Reply(mhd, c, MHD_HTTP_BAD_REQUEST, "GET takes no body\n", kText);
  std::string_view path(url);
  if (path == "/") return Reply(mhd, c, MHD_HTTP_OK, kIndex, "text/html; charset=utf-8");
  if (path != "/metrics") return Reply(mhd, c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n", kText);
  const char* accept = mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
  Exposition e = st->render(accept ? accept : "");
  return Reply(mhd, c, MHD_HTTP_OK, e.body, e.content_type);
}

using Conn = MetricsHttpServer::State::Conn;

// The library read a request line (before its headers): marks the connection as having started.
void* OnRequestLine(void* cls, const char*, MHD_Connection* c) {
  auto* st = static_cast<MetricsHttpServer::State*>(cls);
  if (const MHD_ConnectionInfo* info = st->mhd->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)) {
    std::lock_guard<std::mutex> lock(st->mu);
    if (auto it = st->open.find(info->connect_fd); it != st->open.end()) it->second.started = true;
  }
  return nullptr;  // OnRequest's first call still sees *con_cls == nullptr
}

std::string ClientAddress(const MicrohttpdApi& mhd, MHD_Connection* c) {
  const MHD_ConnectionInfo* info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return {};
  char text[INET6_ADDRSTRLEN] = {};
  if (info->client_addr->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(info->client_addr)->sin_addr, text, sizeof(text));
  else if (info->client_addr->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(info->client_addr)->sin6_addr, text, sizeof(text));
  return text;
}

// Caller holds st->mu. The connection (of `client`, if given) that has waited longest for its
// request, other than `keep`, slow clients' marks first (below). One younger than kHttpSlowAfter is
// taken only when no older one is left and `young_too`: a new connection past the kept limit, after
// a burst that is all young, must still make room, or the burst fills the library's per-address
// limit and the next scrape from that address is reset (seen: 80 slow clients, then at once 20
// scrapes, all 20 reset).
std::map<int, Conn>::iterator LongestWaiting(MetricsHttpServer::State* st, int keep, const std::string* client,
                                             bool young_too) {
  // Ranked: older than kHttpSlowAfter before younger; within each, a connection that sent its
  // request line and stalled in its headers (a slow client's way) before one that sent nothing yet
  // (a client that was itself starved of CPU right after connecting, or a kept-alive one between
  // requests); then the longest waiting.
  std::map<int, Conn>::iterator pick[4];
  for (auto& p : pick) p = st->open.end();
  // A request sent at once arrives within this: a connection younger than it is not slow yet.
  auto young = std::chrono::steady_clock::now() - kHttpSlowAfter;
  for (auto it = st->open.begin(); it != st->open.end(); ++it) {
    const Conn& c = it->second;
    if (it->first == keep || c.evicted || c.answering || (client && c.client != *client)) continue;
    auto& p = pick[(c.waiting_since > young ? 2 : 0) + (c.started ? 0 : 1)];
    if (p == st->open.end() || c.waiting_since < p->second.waiting_since) p = it;
  }
  for (int rank = 0; rank < (young_too ? 4 : 2); ++rank)
    if (pick[rank] != st->open.end()) return pick[rank];
  return st->open.end();
}

// Caller holds st->mu. Shuts the longest-waiting connection (LongestWaiting); the library then sees
// the end of the stream and closes it. One whose whole request already waits in its socket is not
// slow: the server is behind (its CPU starved, as in a single-threaded TCG guest), so it counts as
// being answered and the next one is taken instead.
void EvictOldest(MetricsHttpServer::State* st, int keep, const std::string* client, bool young_too = false) {
  for (;;) {
    auto victim = LongestWaiting(st, keep, client, young_too);
    if (victim == st->open.end()) return;
    if (RequestHeadWaiting(victim->first)) {
      victim->second.answering = true;
      continue;
    }
    ::shutdown(victim->first, SHUT_RDWR);
    victim->second.evicted = true;
    st->live--;
    st->per_client[victim->second.client]--;
    st->evictions++;
    return;
  }
}

void Forget(MetricsHttpServer::State* st, std::map<int, Conn>::iterator it) {
  if (!it->second.evicted) {
    st->live--;
    if (--st->per_client[it->second.client] == 0) st->per_client.erase(it->second.client);
  }
  st->open.erase(it);
}

void OnConnection(void* cls, MHD_Connection* c, void**, MHD_ConnectionNotificationCode code) {
  auto* st = static_cast<MetricsHttpServer::State*>(cls);
  const MHD_ConnectionInfo* info = st->mhd->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!info) return;
  const int fd = info->connect_fd;
  std::lock_guard<std::mutex> lock(st->mu);
  if (code != MHD_CONNECTION_NOTIFY_STARTED) {
    if (auto it = st->open.find(fd); it != st->open.end()) Forget(st, it);
    return;
  }
  auto now = std::chrono::steady_clock::now();
  Conn& conn = st->open[fd];
  conn = Conn{now, now, ClientAddress(*st->mhd, c), false};
  st->live++;
  unsigned& mine = st->per_client[conn.client];
  mine++;
  // The library refuses a connection past its limits (its client sees a reset, or waits in the
  // backlog): they are kept out of reach by closing the connection that has waited longest for its
  // request, so slow clients cannot starve a scraper, also one from their own address (loopback).
  if (mine > kHttpKeptConnectionsPerIp) EvictOldest(st, fd, &conn.client, true);
  if (st->live > kHttpKeptConnections) EvictOldest(st, fd, nullptr, true);
}

void OnCompleted(void* cls, MHD_Connection* c, void**, MHD_RequestTerminationCode) {
  auto* st = static_cast<MetricsHttpServer::State*>(cls);
  const MHD_ConnectionInfo* info = st->mhd->get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!info) return;
  std::lock_guard<std::mutex> lock(st->mu);
  // Answered: a kept-alive connection waits for its next request from now.
  if (auto it = st->open.find(info->connect_fd); it != st->open.end()) {
    it->second.waiting_since = std::chrono::steady_clock::now();
    it->second.answering = false;
    it->second.started = false;
  }
}

// Caller holds st->mu. Brings the kept connections back to their bounds. A burst of slow clients
// that all arrive within kHttpSlowAfter cannot be evicted when they arrive (all young); they then
// fill the library's limit, and with no further connection accepted, nothing would evict them until
// their idle timeout while a scraper waits in the backlog (seen on a quiet machine: 10 s).
void TrimKept(MetricsHttpServer::State* st) {
  while (st->live > kHttpKeptConnections) {
    const unsigned before = st->live;
    EvictOldest(st, -1, nullptr);
    if (st->live == before) break;  // nothing old enough yet
  }
  for (auto& [client, n] : st->per_client) {
    while (n > kHttpKeptConnectionsPerIp) {
      const unsigned before = n;
      EvictOldest(st, -1, &client);
      if (n == before) break;
    }
  }
}

void Watchdog(MetricsHttpServer::State* st) {
  std::unique_lock<std::mutex> lock(st->mu);
  while (!st->stopping) {
    st->cv.wait_for(lock, kHttpSlowAfter);
    TrimKept(st);
    auto deadline = std::chrono::steady_clock::now() - std::chrono::seconds(kHttpMaxConnectionSeconds);
    for (auto it = st->open.begin(); it != st->open.end();) {
      if (it->second.opened > deadline) {
        ++it;
        continue;
      }
      // The library sees the end of the stream and closes the connection itself.
      ::shutdown(it->first, SHUT_RDWR);
      auto next = std::next(it);
      Forget(st, it);
      it = next;
    }
  }
}

Result<sockaddr_storage> ParseListen(const std::string& listen, socklen_t* len) {
  auto bad = [&](const std::string& why) {
    return MakeError(kExitUsage, "serve.listen", "--listen " + listen + ": " + why,
                     "give ADDR:PORT with a numeric address: 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464");
  };
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) return bad("no port");
  std::string host = listen.substr(0, colon), port_text = listen.substr(colon + 1);
  char* end = nullptr;
  unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (*end || port > 65535 || port_text.find_first_not_of("0123456789") != std::string::npos)
    return bad("the port is not a number from 0 to 65535");
  sockaddr_storage ss{};
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a->sin6_addr) != 1)
      return bad("not an IPv6 address");
    *len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) return bad("not an IPv4 address");
    *len = sizeof(sockaddr_in);
  }
  return ss;
}

}  // namespace

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& listen, ExpositionFn render) {
  socklen_t len = 0;
  auto addr = ParseListen(listen, &len);
  if (!addr.ok()) return addr.error();
  auto mhd = LoadMicrohttpd();
  if (!mhd.ok()) return mhd.error();
  std::unique_ptr<MetricsHttpServer> s(new MetricsHttpServer());
  s->state_ = std::make_unique<State>();
  State* st = s->state_.get();
  st->mhd = *mhd;
  st->render = std::move(render);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC;
  if (addr->ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  st->daemon = st->mhd->start_daemon(
      flags, 0, nullptr, nullptr, &OnRequest, st, MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&*addr),
      MHD_OPTION_CONNECTION_LIMIT, kHttpMaxConnections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, kHttpMaxConnectionsPerIp,
      MHD_OPTION_CONNECTION_TIMEOUT, kHttpIdleTimeoutSeconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, kHttpConnectionMemory,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, kHttpListenBacklog, MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_NOTIFY_CONNECTION,
      &OnConnection, st, MHD_OPTION_NOTIFY_COMPLETED, &OnCompleted, st, MHD_OPTION_URI_LOG_CALLBACK, &OnRequestLine, st,
      MHD_OPTION_END);
  if (!st->daemon) {
    int err = errno;
    return MakeError(err == EACCES ? kExitNoPerm : kExitUnavailable, "serve.listen",
                     "cannot listen on " + listen + ": " + std::strerror(err ? err : EADDRINUSE),
                     "another exporter may hold the port: pick another with --listen ADDR:PORT");
  }
  const MHD_DaemonInfo* info = st->mhd->get_daemon_info(st->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port_ = info ? info->port : 0;
  st->watchdog = std::thread(Watchdog, st);
  return s;
}

uint64_t MetricsHttpServer::requests() const { return state_->requests.load(); }

uint64_t MetricsHttpServer::evictions() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->evictions;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (!state_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (state_->watchdog.joinable()) state_->watchdog.join();
  if (state_->daemon) state_->mhd->stop_daemon(state_->daemon);
}

}  // namespace exitscope
