#include "stall_warning.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

namespace gpushare::apiclient {
namespace {

constexpr std::chrono::milliseconds kMaxWarningInterval = std::chrono::minutes(5);

std::vector<std::string_view> segments_of(std::string_view path) {
  std::vector<std::string_view> segments;
  while (!path.empty()) {
    const auto slash = path.find('/');
    if (slash != 0) segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

std::string seconds_text(std::chrono::milliseconds elapsed) {
  return elapsed < std::chrono::seconds(10)
             ? fmt::format("{:.1f} s", static_cast<double>(elapsed.count()) / 1000)
             : fmt::format("{} s", elapsed.count() / 1000);
}

}  // namespace

std::string describe_request(HttpMethod method, std::string_view path, const Query& query) {
  // /api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]] or /apis/GROUP/VERSION/...
  std::vector<std::string_view> parts = segments_of(path.substr(0, path.find('?')));
  std::size_t at = parts.size() >= 2 && parts[0] == "api"    ? 2
                   : parts.size() >= 3 && parts[0] == "apis" ? 3
                                                             : parts.size();
  std::string ns;
  if (at + 2 < parts.size() && parts[at] == "namespaces") {
    ns = std::string(parts[at + 1]);
    at += 2;
  }
  if (at >= parts.size()) return fmt::format("{} {}", to_string(method), path);
  const std::string plural(parts[at]);
  const std::string name = at + 1 < parts.size() ? std::string(parts[at + 1]) : "";
  const std::string sub = at + 2 < parts.size() ? std::string(parts[at + 2]) : "";
  std::string singular = plural;
  if (singular.ends_with('s')) singular.pop_back();
  const std::string object = ns.empty() ? name : ns + "/" + name;
  const std::string* watch = find_query_value(query, "watch");
  if (watch != nullptr && (*watch == "1" || *watch == "true")) return "watch " + plural;
  if (name.empty()) return method == HttpMethod::kPost ? "create " + singular : "list " + plural;
  if (sub == "binding") return "bind " + singular + " " + object;
  std::string verb;
  switch (method) {
    case HttpMethod::kGet:
      verb = "get";
      break;
    case HttpMethod::kPost:
      verb = "create";
      break;
    case HttpMethod::kPut:
      verb = "update";
      break;
    case HttpMethod::kPatch:
      verb = "patch";
      break;
    case HttpMethod::kDelete:
      verb = "delete";
      break;
  }
  return fmt::format("{} {}{} {}", verb, singular, sub.empty() ? "" : "/" + sub, object);
}

StallWarning::StallWarning(std::chrono::milliseconds threshold, std::string server,
                           std::string what, SteadyClock clock)
    : threshold_(threshold),
      server_(std::move(server)),
      what_(std::move(what)),
      clock_(std::move(clock)),
      start_(clock_()),
      next_warning_(threshold),
      interval_(threshold) {}

void StallWarning::finish(CURL* easy) {
  if (warnings_ == 0) return;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock_() - start_);
  if (status != 0) {
    spdlog::info("API server {} answered {} after {}", server_, what_, seconds_text(waited));
  } else {
    spdlog::warn("API server {}: {} ended after {} without an answer", server_, what_,
                 seconds_text(waited));
  }
}

std::chrono::milliseconds StallWarning::check_interval() const {
  return std::clamp(threshold_ / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

void StallWarning::check(CURL* easy) {
  if (threshold_.count() <= 0) return;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  if (status != 0) return;
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock_() - start_);
  if (waited < next_warning_) return;
  curl_off_t connect_time = 0;
  curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_time);
  ++warnings_;
  spdlog::warn("API server {} has not answered {} for {} ({}); still waiting", server_, what_,
               seconds_text(waited),
               connect_time > 0 ? "connected, no response yet" : "not connected yet");
  next_warning_ = waited + interval_;  // T, then 2T, 4T, ... later, and every 5 minutes at most
  interval_ = std::min(kMaxWarningInterval, interval_ * 2);
}

}  // namespace gpushare::apiclient
