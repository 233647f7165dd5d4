#pragma once
// Who may call the scheduling verbs (filter, prioritize, bind, preempt): the clients whose
// address is in --allowed-clients and, with --tls-client-ca, that presented a certificate signed
// by that CA. Anyone who may call bind can place pods on GPUs, so these are the endpoints
// guarded. /healthz, /readyz, /version and /metrics stay open (kubelet's probes and Prometheus
// carry no client certificate and come from addresses the scheduler does not), and so do the
// read-only /inspect and /ui; a NetworkPolicy limits who reaches the port at all
// (docs/hardening.md, "Who may call the extender").

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;

namespace httplib {
class Server;
}

namespace gpushare::http {

// A list of client networks: "10.0.0.0/8,127.0.0.1/32,fd00::/8". A bare address is one host
// (/32 or /128). An IPv4 client seen on an IPv6 socket (::ffff:10.1.2.3) matches IPv4 entries.
class ClientNetworks {
 public:
  // Throws std::invalid_argument naming the entry that is not a network.
  static ClientNetworks parse(std::string_view list);

  bool empty() const { return networks_.empty(); }
  // `address` as the server reports a peer: numeric IPv4 or IPv6, maybe with a %zone.
  bool contains(std::string_view address) const;
  // The networks in canonical form, comma-separated (for the start-up log).
  std::string describe() const;

 private:
  struct Network {
    std::array<std::uint8_t, 16> bytes{};  // IPv4 in the first 4 bytes
    int prefix = 0;
    bool v4 = false;
  };
  std::vector<Network> networks_;
};

struct ClientAccessOptions {
  ClientNetworks allowed_clients;  // empty: any address
  // --tls-client-ca: a PEM file of the CAs whose client certificates are accepted; empty: none
  // required.
  std::string client_ca_file;
};

class ClientAccess {
 public:
  explicit ClientAccess(ClientAccessOptions options) : options_(std::move(options)) {}

  // With a client CA: makes the TLS server ask every client for a certificate and verify one
  // that is sent against the CA (a bad one fails the handshake). A client may still connect
  // without one, so that probes work; the scheduling verbs then refuse it. Returns an error
  // (no CA file, unreadable, not TLS), or empty.
  std::string configure(httplib::Server& server) const;

  // True when some callers are refused (an allow-list or a client CA is set).
  bool restricts() const {
    return !options_.allowed_clients.empty() || !options_.client_ca_file.empty();
  }

  // Why a request to a scheduling verb from `remote_addr` on this connection (`ssl`: nullptr
  // for plain HTTP) is refused, or nullopt if it may go on.
  std::optional<std::string> refusal(std::string_view remote_addr, const SSL* ssl) const;

  // Logs a refusal at warn level, at most once a second (a client retrying in a loop must not
  // flood the log); the lines say how many were not logged.
  void log_refusal(std::string_view remote_addr, std::string_view path, std::string_view why);

  // The start-up log's summary: "any client" or the networks and the certificate requirement.
  std::string describe() const;

 private:
  ClientAccessOptions options_;
  std::atomic<std::int64_t> last_log_ms_{0};
  std::atomic<std::uint64_t> unlogged_{0};
};

}  // namespace gpushare::http
