// The HTTP endpoint of `exitscope serve`: GET /metrics (the exposition) and GET / (a pointer to
// it), nothing else. In: a listen address and a function that renders the exposition for an Accept
// header. Out: answers until destroyed. Safe by default: loopback unless told otherwise, and every
// resource a client can hold is bounded (see kHttp* below).
//
// Library: GNU libmicrohttpd (Debian libmicrohttpd-dev), the server prometheus-client-c's promhttp
// uses, loaded when Start runs (microhttpd_api.h), not linked. Chosen over cpp-httplib 0.11
// (Debian 12's libcpp-httplib-dev), which bounds one header line but not the number of headers,
// queues accepted connections without limit and gives a thread to each (a client sending header
// after header makes it grow without bound); prometheus-cpp is not in Debian 12. libmicrohttpd
// gives each connection a fixed memory pool (request line and headers past it get 431/414), a
// connection limit in total and per client address, an idle timeout, and one epoll thread for
// every connection (a slow client stalls none of the others). On top, a
// watchdog closes any connection open longer than kHttpMaxConnectionSeconds, however slowly it
// trickles bytes, and a new connection near either limit closes the one that has waited longest
// for its request (kHttpKeptConnections), one stalled after its request line first, so slow clients
// cannot starve a scraper, not even from its own address. A connection whose request already waits in its socket is
// never the one closed: when serve's own CPU is starved, the scraper is not the slow one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace exitscope {

// Connections kept, in all and per client address: a new one past either closes the connection
// that has waited longest for its request (a slow client), so a scrape always gets in.
inline constexpr unsigned kHttpKeptConnections = 32;
inline constexpr unsigned kHttpKeptConnectionsPerIp = 16;
inline constexpr std::chrono::milliseconds kHttpSlowAfter{250};  // waiting longer: may be closed
// The library's hard limits (past them it resets, or leaves in the backlog): four times the kept
// ones, room for closed connections on their way out while new ones keep coming. It takes in up to
// 10 connections at a time and lets go of closed ones a round later, so after a stall a burst from
// the backlog can pass twice the kept ones and a scrape from that address be reset (in a
// single-threaded TCG guest 2 of 300 scrapes failed with "Connection reset by peer", which this or
// an eviction gives).
inline constexpr unsigned kHttpMaxConnections = 4 * kHttpKeptConnections;
inline constexpr unsigned kHttpMaxConnectionsPerIp = 4 * kHttpKeptConnectionsPerIp;
inline constexpr unsigned kHttpIdleTimeoutSeconds = 5;      // no byte for that long: closed
inline constexpr unsigned kHttpMaxConnectionSeconds = 15;   // open for that long in all: closed
inline constexpr size_t kHttpConnectionMemory = 16 * 1024;  // request line + headers per connection
inline constexpr unsigned kHttpListenBacklog = 16;

struct Exposition {
  std::string body;
  std::string content_type;
};
using ExpositionFn = std::function<Exposition(std::string_view accept)>;

// Whether a whole request head (through its blank line) waits unread in the socket `fd`: the
// client has sent its request and only the server is behind. Peeks; consumes nothing.
bool RequestHeadWaiting(int fd);

class MetricsHttpServer {
 public:
  // `listen`: "ADDR:PORT" with a numeric IPv4 address or "[IPv6]:PORT" (port 0: any free one).
  static Result<std::unique_ptr<MetricsHttpServer>> Start(const std::string& listen, ExpositionFn render);
  ~MetricsHttpServer();
  uint16_t port() const { return port_; }
  uint64_t requests() const;
  uint64_t evictions() const;  // connections closed to keep slots free

  struct State;  // shared with the library's callbacks

 private:
  MetricsHttpServer() = default;
  std::unique_ptr<State> state_;
  uint16_t port_ = 0;
};

}  // namespace exitscope
