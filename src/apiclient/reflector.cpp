#include "gpushare/apiclient/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "gpushare/apiclient/pager.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Under ASan/TSan the sanitizer's allocator replaces glibc's, whose arenas are then never set
// up; malloc_trim on them crashed TSan builds (two reflectors trimming at once after a list).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GPUSHARE_SANITIZED_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GPUSHARE_SANITIZED_ALLOCATOR 1
#endif
#endif
#ifndef GPUSHARE_SANITIZED_ALLOCATOR
#define GPUSHARE_SANITIZED_ALLOCATOR 0
#endif

namespace gpushare::apiclient {

struct Reflector::ListResult {
  std::string resource_version;
  bool paginated = false;  // the server split the list into pages
};

Reflector::Reflector(ApiClient& client, ReflectorOptions options, ReflectorHandler& handler)
    : client_(client),
      options_(std::move(options)),
      handler_(handler),
      backoff_(options_.backoff, options_.clock, options_.random) {
  if (options_.name.empty()) options_.name = options_.path;
}

Reflector::~Reflector() {
  stop();
}

void Reflector::start() {
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Reflector::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Reflector::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_mutex_);
  return synced_cv_.wait_for(lock, timeout, [this] { return has_synced(); });
}

ReflectorCounters Reflector::counters() const {
  std::lock_guard lock(state_mutex_);
  return counters_;
}

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(state_mutex_);
  return last_rv_;
}

void Reflector::note_progress() {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  last_progress_ns_.store(now.count(), std::memory_order_release);
  failing_since_ns_.store(0, std::memory_order_release);
}

void Reflector::set_resource_version(std::string rv) {
  std::lock_guard lock(state_mutex_);
  last_rv_ = std::move(rv);
}

Query Reflector::selector_query() const {
  Query query;
  if (!options_.field_selector.empty())
    query.emplace_back("fieldSelector", options_.field_selector);
  if (!options_.label_selector.empty())
    query.emplace_back("labelSelector", options_.label_selector);
  return query;
}

std::chrono::seconds Reflector::pick_watch_timeout() {
  const auto low = options_.min_watch_timeout.count();
  const auto high = std::max(low, options_.max_watch_timeout.count());
  const auto span = static_cast<double>(high - low + 1);
  const auto offset = static_cast<long long>(span * std::clamp(options_.random(), 0.0, 1.0));
  return std::chrono::seconds(std::min<long long>(low + offset, high));
}

bool Reflector::back_off(std::stop_token stop) {
  const auto delay = backoff_.next_delay();
  // Every failure backs off: the first one since the last progress starts the failing clock.
  std::int64_t not_failing = 0;
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  failing_since_ns_.compare_exchange_strong(not_failing, now.count(), std::memory_order_acq_rel);
  {
    std::lock_guard lock(state_mutex_);
    ++counters_.errors;
  }
  spdlog::debug("reflector {}: backing off {} ms", options_.name, delay.count());
  return options_.sleeper(delay, stop) && !stop.stop_requested();
}

void Reflector::run(std::stop_token stop) {
  spdlog::info("reflector {}: starting list/watch", options_.name);
  while (!stop.stop_requested()) {
    if (!list_and_replace(stop)) {
      if (!back_off(stop)) break;
      continue;
    }
    Next next = Next::kRewatch;
    while (next == Next::kRewatch) next = watch_once(stop);
    if (next == Next::kStop) break;
  }
  spdlog::info("reflector {}: stopped", options_.name);
}

Result<Reflector::ListResult> Reflector::list_all(const std::string& resource_version,
                                                  std::stop_token stop) {
  // client-go pages by 500 when listing from the cache start ("0") or consistently (""), and
  // lists a specific RV in one piece (the watch cache serves it) unless the server paged before.
  const bool paged = options_.page_size > 0 &&
                     (paginated_result_ || resource_version.empty() || resource_version == "0");
  PagerOptions pager;
  pager.query = selector_query();
  pager.resource_version = resource_version;
  pager.page_size = paged ? options_.page_size : 0;
  pager.require_resource_version = true;
  pager.stop = stop;
  ListResult out;
  auto on_begin = [&] { handler_.on_list_begin(); };
  auto on_item = [&](const json::Value& item) { handler_.on_list_item(item); };
  auto listed = list_paged(client_, options_.path, pager, on_begin, on_item);
  if (!listed.ok()) return listed.error();
  if (listed.value().restarted_unpaged) {
    std::lock_guard lock(state_mutex_);
    ++counters_.expired;
  }
  out.resource_version = std::move(listed.value().resource_version);
  out.paginated = listed.value().paginated;
  return out;
}

bool Reflector::list_and_replace(std::stop_token stop) {
  bool relist = false;
  {
    std::lock_guard lock(state_mutex_);
    if (counters_.lists > 0) ++counters_.relists;
    relist = counters_.lists > 0;
  }
  const std::string current_rv = last_resource_version();
  std::string rv = last_rv_unavailable_ ? "" : (current_rv.empty() ? "0" : current_rv);
  // Relists are rare and costly at scale: say when one begins (after its back-off), so that its
  // duration shows in the log next to the handler's "listed" line.
  if (relist) {
    spdlog::info("reflector {}: relisting from resourceVersion {}", options_.name,
                 rv.empty() ? "\"\"" : rv);
  }
  auto result = list_all(rv, stop);
  if (!result.ok() && !result.error().is_stopped() &&
      (result.error().is_expired() || result.error().is_resource_version_too_large())) {
    if (result.error().is_expired()) {
      std::lock_guard lock(state_mutex_);
      ++counters_.expired;
    }
    // That RV is gone (or not reached yet): list consistently from etcd, right away.
    last_rv_unavailable_ = true;
    if (!rv.empty()) {
      spdlog::info("reflector {}: list at resourceVersion {} failed ({}); listing from etcd",
                   options_.name, rv, result.error().describe());
      rv.clear();
      result = list_all(rv, stop);
    }
  }
  if (!result.ok()) {
    if (!result.error().is_stopped()) {
      spdlog::warn("reflector {}: list failed: {}", options_.name, result.error().describe());
    }
    return false;
  }

  last_rv_unavailable_ = false;
  paginated_result_ = paginated_result_ || result.value().paginated;
  ListResult& list = result.value();
  try {
    handler_.on_replace(list.resource_version);
  } catch (const std::exception& e) {
    spdlog::error("reflector {}: on_replace failed: {}", options_.name, e.what());
    return false;
  }
  set_resource_version(list.resource_version);
#if defined(__GLIBC__) && !GPUSHARE_SANITIZED_ALLOCATOR
  // A list frees many small parse-time allocations at once; glibc keeps such memory in its
  // arenas (one per reflector thread) unless asked to give it back.
  malloc_trim(0);
#endif
  note_progress();
  {
    std::lock_guard lock(state_mutex_);
    ++counters_.lists;
    synced_.store(true, std::memory_order_release);
  }
  synced_cv_.notify_all();
  spdlog::debug("reflector {}: listed at resourceVersion {}", options_.name, list.resource_version);
  return true;
}

Reflector::Next Reflector::watch_once(std::stop_token stop) {
  if (stop.stop_requested()) return Next::kStop;
  const std::string rv = last_resource_version();
  Query query = selector_query();
  query.emplace_back("resourceVersion", rv);
  query.emplace_back("allowWatchBookmarks", "true");
  query.emplace_back("timeoutSeconds", std::to_string(pick_watch_timeout().count()));
  {
    std::lock_guard lock(state_mutex_);
    if (counters_.watches > 0) ++counters_.watch_restarts;
    ++counters_.watches;
  }

  auto on_event = [this](WatchEvent&& event) {
    std::string event_rv = resource_version_of(event.object);
    if (event.type == WatchEventType::kBookmark) {
      std::lock_guard lock(state_mutex_);
      ++counters_.bookmarks;
    } else {
      handler_.on_event(event.type, event.object);  // a throw ends the watch (relist)
      std::lock_guard lock(state_mutex_);
      ++counters_.events;
    }
    // Only after the handler took the event: a relist must not skip it.
    if (!event_rv.empty()) set_resource_version(std::move(event_rv));
    note_progress();
  };

  const auto started = options_.clock();
  const WatchResult result = client_.watch(options_.path, query, on_event, stop);
  const auto lasted = options_.clock() - started;

  auto relist_after_backoff = [&] { return back_off(stop) ? Next::kRelist : Next::kStop; };
  auto rewatch_after_backoff = [&] { return back_off(stop) ? Next::kRewatch : Next::kStop; };
  // A clean end (or a dropped connection mid-stream) means "watch again from the last RV",
  // unless the watch died at once with nothing to show: then the server is unhappy.
  auto after_close = [&](std::string_view how) {
    if (result.events == 0 && lasted < options_.min_healthy_watch) {
      spdlog::warn("reflector {}: very short watch ({}: {} ms, no events); relisting",
                   options_.name, how,
                   std::chrono::duration_cast<std::chrono::milliseconds>(lasted).count());
      return relist_after_backoff();
    }
    spdlog::debug("reflector {}: watch {} after {} events; watching again", options_.name, how,
                  result.events);
    // The server ending a watch it served (its time-out) shows we were in step until now; a
    // connection lost mid-stream shows nothing beyond the events it delivered.
    if (result.end == WatchEnd::kClosed) note_progress();
    return Next::kRewatch;
  };

  switch (result.end) {
    case WatchEnd::kStopped:
      return Next::kStop;
    case WatchEnd::kClosed:
      return after_close("closed");
    case WatchEnd::kTransportError:
      if (result.established) return after_close("connection lost");
      if (result.error && result.error->is_connect_failure()) {
        spdlog::info("reflector {}: watch: {}; retrying", options_.name, result.error->describe());
        return rewatch_after_backoff();
      }
      break;
    case WatchEnd::kHttpError:
    case WatchEnd::kErrorEvent:
      if (result.error && result.error->is_too_many_requests()) {
        spdlog::info("reflector {}: watch throttled (429); retrying", options_.name);
        return rewatch_after_backoff();
      }
      if (result.error && result.error->is_expired()) {
        {
          std::lock_guard lock(state_mutex_);
          ++counters_.expired;
        }
        spdlog::info("reflector {}: watch at resourceVersion {} expired; relisting", options_.name,
                     rv);
        return relist_after_backoff();
      }
      break;
    case WatchEnd::kDecodeError:
    case WatchEnd::kHandlerError:
      break;
  }
  spdlog::warn("reflector {}: watch ended ({}): {}; relisting", options_.name,
               to_string(result.end), result.error ? result.error->describe() : "");
  return relist_after_backoff();
}

}  // namespace gpushare::apiclient
