#pragma once
// A list/watch loop for one resource, following client-go's Reflector (protocol-reference §2):
// paged list, watch from the list's resourceVersion with bookmarks, re-watch on a clean close,
// relist on 410 or any other failure, exponential backoff with jitter between failures.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/backoff.h"
#include "gpushare/apiclient/clock.h"
#include "gpushare/apiclient/watch_event.h"

namespace gpushare::apiclient {

// Receives the resource's state. Called on the reflector's thread only, never concurrently.
// An exception from a callback is logged and makes the reflector relist (after backoff).
class ReflectorHandler {
 public:
  virtual ~ReflectorHandler() = default;
  // Lists are streamed, so a 50 000-pod list never sits in memory as JSON: a list attempt
  // starts with on_list_begin() (drop anything staged by an earlier, failed attempt), then every
  // listed object goes to on_list_item() as its page arrives, to be decoded at once (the element
  // is valid during the call only) and staged.
  virtual void on_list_begin() = 0;
  virtual void on_list_item(const json::Value& object) = 0;
  // The list is complete: replace the cache with what was staged since on_list_begin(),
  // dropping objects that were not listed.
  virtual void on_replace(const std::string& resource_version) = 0;
  // ADDED, MODIFIED or DELETED (the object's last state, valid during the call only). BOOKMARKs
  // are consumed internally.
  virtual void on_event(WatchEventType type, const json::Value& object) = 0;
};

struct ReflectorOptions {
  std::string path;            // collection path, e.g. "/api/v1/pods"
  std::string field_selector;  // e.g. "status.phase!=Succeeded,status.phase!=Failed"
  std::string label_selector;
  std::string name;                             // for logs; defaults to `path`
  int page_size = 500;                          // list limit; 0 disables paging
  std::chrono::seconds min_watch_timeout{300};  // timeoutSeconds is drawn uniformly from
  std::chrono::seconds max_watch_timeout{600};  // [min, max] for each watch
  ReconnectBackoffOptions backoff;
  // A watch that ends sooner than this with no events counts as a failure (client-go: 1 s).
  std::chrono::milliseconds min_healthy_watch{1000};
  SteadyClock clock = real_steady_clock();
  Sleeper sleeper = real_sleeper();  // backoff waits
  RandomSource random = default_random_source();
};

struct ReflectorCounters {
  std::uint64_t lists = 0;           // successful full lists (the first one included)
  std::uint64_t relists = 0;         // list attempts after the first successful one
  std::uint64_t watches = 0;         // watch requests started
  std::uint64_t watch_restarts = 0;  // watches started after the first (re-watch or after relist)
  std::uint64_t events = 0;          // ADDED/MODIFIED/DELETED delivered
  std::uint64_t bookmarks = 0;
  std::uint64_t expired = 0;  // 410s seen (list continue, list, watch)
  std::uint64_t errors = 0;   // failures that led to a backoff
};

class Reflector {
 public:
  // `client` and `handler` must outlive the reflector. Does not start the thread.
  Reflector(ApiClient& client, ReflectorOptions options, ReflectorHandler& handler);
  ~Reflector();  // stop()
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void start();  // starts the list/watch thread; at most once
  // Requests stop and joins: an in-flight request or backoff wait is interrupted promptly.
  void stop();

  // True once the first list has been delivered via on_replace.
  bool has_synced() const { return synced_.load(std::memory_order_acquire); }
  // Waits until has_synced() or the timeout; returns has_synced().
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  ReflectorCounters counters() const;
  std::string last_resource_version() const;
  // Wall-clock time (ns since the epoch) of the last sign that this reflector is in step with
  // the API server: a complete list, an event or bookmark delivered, or a watch the server ended
  // cleanly. 0 before the first list. Failed lists and watches never move it, so during an
  // outage it stays at the last real contact (kube-apiserver sends every watch that allows them
  // a bookmark about once a minute, so a quiet but healthy watch still moves it).
  std::int64_t last_progress_unix_ns() const {
    return last_progress_ns_.load(std::memory_order_acquire);
  }
  const std::string& name() const { return options_.name; }
  // Wall-clock time (ns since the epoch) of the first failed list or watch since the last sign
  // of progress (see above); 0 while in step. A watch that is open and quiet is not failing.
  std::int64_t failing_since_unix_ns() const {
    return failing_since_ns_.load(std::memory_order_acquire);
  }

 private:
  enum class Next { kRelist, kRewatch, kStop };
  struct ListResult;

  void run(std::stop_token stop);
  // Lists everything and calls on_replace; false on failure (already logged and counted).
  bool list_and_replace(std::stop_token stop);
  Result<ListResult> list_all(const std::string& resource_version, std::stop_token stop);
  Next watch_once(std::stop_token stop);
  bool back_off(std::stop_token stop);  // false if stopped while waiting
  std::chrono::seconds pick_watch_timeout();
  Query selector_query() const;
  void set_resource_version(std::string rv);
  void note_progress();

  ApiClient& client_;
  ReflectorOptions options_;
  ReflectorHandler& handler_;
  ReconnectBackoff backoff_;

  // Owned by the reflector thread.
  bool last_rv_unavailable_ = false;  // the last RV was too old/new: list from etcd ("")
  bool paginated_result_ = false;     // a list came back in pages, so keep paging (client-go)

  mutable std::mutex state_mutex_;
  mutable std::condition_variable synced_cv_;
  std::string last_rv_;
  ReflectorCounters counters_;
  std::atomic<bool> synced_{false};
  std::atomic<std::int64_t> last_progress_ns_{0};
  std::atomic<std::int64_t> failing_since_ns_{0};

  std::jthread thread_;  // last: joined first on destruction
};

}  // namespace gpushare::apiclient
