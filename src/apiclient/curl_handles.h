#pragma once
// RAII ownership of libcurl handles and the stoppable transfer loop (internal).

#include <curl/curl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::apiclient::detail {

// curl_global_init exactly once per process (never cleaned up: the process owns it).
void ensure_curl_initialized();

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct MultiDeleter {
  void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

class HeaderList {
 public:
  void append(const std::string& line);
  curl_slist* get() const { return list_.get(); }

 private:
  std::unique_ptr<curl_slist, SlistDeleter> list_;
};

// One reusable connection: the multi handle owns the connection cache (an easy handle added to
// a multi uses the multi's cache), so keeping the pair together is what gives keep-alive.
// Members are declared so that the easy handle, never left attached, is destroyed first.
struct TransferSlot {
  MultiHandle multi;
  EasyHandle easy;
};

// Idle slots for reuse. Any number can be lent out; at most `max_idle` are kept.
class SlotPool {
 public:
  explicit SlotPool(std::size_t max_idle) : max_idle_(max_idle) {}

  class Lease {
   public:
    Lease(SlotPool& pool, std::unique_ptr<TransferSlot> slot)
        : pool_(&pool), slot_(std::move(slot)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (slot_) pool_->give_back(std::move(slot_));
    }
    TransferSlot& operator*() const { return *slot_; }
    TransferSlot* operator->() const { return slot_.get(); }

   private:
    SlotPool* pool_;
    std::unique_ptr<TransferSlot> slot_;
  };

  Lease acquire();  // throws std::runtime_error if libcurl cannot allocate handles

 private:
  void give_back(std::unique_ptr<TransferSlot> slot);

  std::mutex mutex_;
  std::vector<std::unique_ptr<TransferSlot>> idle_;
  const std::size_t max_idle_;
};

struct TransferOutcome {
  CURLcode code = CURLE_OK;
  bool stopped = false;  // stop was requested; the transfer was abandoned
  long http_status = 0;  // 0 if no response line was received
  std::string multi_error;
};

// Called between polls while a transfer runs, at least every `interval`.
struct TransferTicker {
  std::chrono::milliseconds interval{1000};
  std::function<void(CURL* easy)> tick;
};

// Runs the configured easy handle of `slot` to completion. Returns as soon as `stop` is
// requested, even while the connection is idle (curl_multi_wakeup interrupts the poll).
TransferOutcome run_transfer(TransferSlot& slot, std::stop_token stop,
                             const TransferTicker* ticker = nullptr);

}  // namespace gpushare::apiclient::detail
