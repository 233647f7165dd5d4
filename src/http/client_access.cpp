#include "gpushare/http/client_access.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <stdexcept>

namespace gpushare::http {
namespace {

struct Address {
  std::array<std::uint8_t, 16> bytes{};
  bool v4 = false;
};

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// IPv4, IPv6, or IPv4-mapped IPv6 (reported as IPv4); a %zone suffix is ignored.
std::optional<Address> parse_address(std::string_view text) {
  text = text.substr(0, text.find('%'));
  const std::string copy(text);
  Address address;
  if (inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) {
    address.v4 = true;
    return address;
  }
  if (inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) != 1) return std::nullopt;
  constexpr std::array<std::uint8_t, 12> kMapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped.begin(), kMapped.end(), address.bytes.begin())) {
    std::copy(address.bytes.begin() + 12, address.bytes.end(), address.bytes.begin());
    std::fill(address.bytes.begin() + 4, address.bytes.end(), 0);
    address.v4 = true;
  }
  return address;
}

bool same_prefix(const std::array<std::uint8_t, 16>& a, const std::array<std::uint8_t, 16>& b,
                 int prefix) {
  const int whole = prefix / 8;
  if (!std::equal(a.begin(), a.begin() + whole, b.begin())) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ClientNetworks ClientNetworks::parse(std::string_view list) {
  ClientNetworks networks;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = std::min(list.find(',', start), list.size());
    const std::string_view entry = trim(list.substr(start, comma - start));
    start = comma + 1;
    if (entry.empty()) continue;
    const auto slash = entry.find('/');
    const auto address = parse_address(entry.substr(0, slash));
    if (!address || entry.substr(0, slash).find('%') != std::string_view::npos) {
      throw std::invalid_argument(fmt::format("\"{}\" is not an IPv4 or IPv6 network", entry));
    }
    Network network{address->bytes, address->v4 ? 32 : 128, address->v4};
    if (slash != std::string_view::npos) {
      const std::string_view digits = entry.substr(slash + 1);
      int prefix = -1;
      const auto [end, error] =
          std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
      if (error != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
          prefix < 0 || prefix > network.prefix) {
        throw std::invalid_argument(
            fmt::format("\"{}\": the prefix length must be 0-{}", entry, network.prefix));
      }
      network.prefix = prefix;
    }
    networks.networks_.push_back(network);
  }
  return networks;
}

bool ClientNetworks::contains(std::string_view address_text) const {
  const auto address = parse_address(address_text);
  if (!address) return false;
  return std::any_of(networks_.begin(), networks_.end(), [&](const Network& network) {
    return network.v4 == address->v4 && same_prefix(network.bytes, address->bytes, network.prefix);
  });
}

std::string ClientNetworks::describe() const {
  std::string out;
  for (const auto& network : networks_) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(network.v4 ? AF_INET : AF_INET6, network.bytes.data(), text, sizeof text);
    out += fmt::format("{}{}/{}", out.empty() ? "" : ",", text, network.prefix);
  }
  return out;
}

std::string ClientAccess::configure(httplib::Server& server) const {
  const std::string& ca = options_.client_ca_file;
  if (ca.empty()) return {};
  auto* tls = dynamic_cast<httplib::SSLServer*>(&server);
  if (tls == nullptr) return "--tls-client-ca needs HTTPS (--tls-cert-file)";
  SSL_CTX* context = tls->ssl_context();
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca.c_str());
  if (names == nullptr || SSL_CTX_load_verify_locations(context, ca.c_str(), nullptr) != 1) {
    if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
    return fmt::format("--tls-client-ca {}: unreadable, or no PEM certificate in it", ca);
  }
  SSL_CTX_set_client_CA_list(context, names);  // takes ownership; tells clients which CA
  // Without FAIL_IF_NO_PEER_CERT: a client without a certificate still connects (probes), and
  // refusal() turns it away from the scheduling verbs.
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
  // Resumed sessions keep the verified peer; OpenSSL refuses resumption with peer verification
  // unless a session id context is set.
  static constexpr unsigned char kContext[] = "gpushare-extender";
  SSL_CTX_set_session_id_context(context, kContext, sizeof kContext - 1);
  return {};
}

std::optional<std::string> ClientAccess::refusal(std::string_view remote_addr,
                                                 const SSL* ssl) const {
  if (!options_.allowed_clients.empty() && !options_.allowed_clients.contains(remote_addr)) {
    return fmt::format("client address {} is not in --allowed-clients", remote_addr);
  }
  if (!options_.client_ca_file.empty()) {
    // A certificate that was sent has been verified in the handshake; check again anyway, in
    // case verification is ever relaxed.
    if (ssl == nullptr || SSL_get0_peer_certificate(ssl) == nullptr) {
      return "no client certificate (--tls-client-ca requires one)";
    }
    if (SSL_get_verify_result(ssl) != X509_V_OK) return "client certificate not verified";
  }
  return std::nullopt;
}

void ClientAccess::log_refusal(std::string_view remote_addr, std::string_view path,
                               std::string_view why) {
  const std::int64_t now = now_ms();
  std::int64_t last = last_log_ms_.load();
  if (now - last < 1000 || !last_log_ms_.compare_exchange_strong(last, now)) {
    unlogged_.fetch_add(1);
    return;
  }
  const std::uint64_t unlogged = unlogged_.exchange(0);
  spdlog::warn("refused {} from {} with 403: {}{}", path, remote_addr, why,
               unlogged == 0 ? "" : fmt::format(" ({} more refusals not logged)", unlogged));
}

std::string ClientAccess::describe() const {
  const std::string who = options_.allowed_clients.empty()
                              ? std::string("any client address")
                              : "clients in " + options_.allowed_clients.describe();
  return options_.client_ca_file.empty()
             ? who
             : who + " with a certificate signed by " + options_.client_ca_file;
}

}  // namespace gpushare::http
