#include "curl_handles.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace gpushare::apiclient::detail {

void ensure_curl_initialized() {
  static const CURLcode result = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (result != CURLE_OK) {
    throw std::runtime_error(std::string("curl_global_init failed: ") + curl_easy_strerror(result));
  }
}

void HeaderList::append(const std::string& line) {
  curl_slist* extended = curl_slist_append(list_.get(), line.c_str());
  if (extended == nullptr) throw std::bad_alloc();
  // Appending to a non-empty list returns its unchanged head; only a new list needs adopting.
  if (!list_) list_.reset(extended);
}

SlotPool::Lease SlotPool::acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto slot = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(slot));
    }
  }
  auto slot = std::make_unique<TransferSlot>();
  slot->multi.reset(curl_multi_init());
  slot->easy.reset(curl_easy_init());
  if (!slot->multi || !slot->easy) throw std::runtime_error("libcurl: cannot create handles");
  return Lease(*this, std::move(slot));
}

void SlotPool::give_back(std::unique_ptr<TransferSlot> slot) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(slot));
}

TransferOutcome run_transfer(TransferSlot& slot, std::stop_token stop,
                             const TransferTicker* ticker) {
  TransferOutcome outcome;
  if (stop.stop_requested()) {
    outcome.stopped = true;
    return outcome;
  }
  CURLM* multi = slot.multi.get();
  CURL* easy = slot.easy.get();
  if (const CURLMcode added = curl_multi_add_handle(multi, easy); added != CURLM_OK) {
    outcome.code = CURLE_FAILED_INIT;
    outcome.multi_error = curl_multi_strerror(added);
    return outcome;
  }
  {
    // Scoped so that the callback is unregistered (and any concurrent run of it finished)
    // before the handle is detached.
    std::stop_callback wake_on_stop(stop, [multi] { curl_multi_wakeup(multi); });
    int running = 1;
    bool finished = false;
    for (;;) {
      CURLMcode status = curl_multi_perform(multi, &running);
      if (status != CURLM_OK) {
        outcome.code = CURLE_FAILED_INIT;
        outcome.multi_error = curl_multi_strerror(status);
        break;
      }
      if (running == 0) {
        finished = true;
        break;
      }
      if (stop.stop_requested()) break;
      // The timeout only bounds how long curl may wait between its own timer checks.
      const int poll_ms =
          ticker != nullptr
              ? static_cast<int>(std::min<std::int64_t>(1000, ticker->interval.count()))
              : 1000;
      status = curl_multi_poll(multi, nullptr, 0, poll_ms, nullptr);
      if (status != CURLM_OK) {
        outcome.code = CURLE_FAILED_INIT;
        outcome.multi_error = curl_multi_strerror(status);
        break;
      }
      if (ticker != nullptr) ticker->tick(easy);
      if (stop.stop_requested()) break;
    }
    if (finished) {
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
        if (message->msg == CURLMSG_DONE && message->easy_handle == easy) {
          outcome.code = message->data.result;
        }
      }
    } else if (outcome.multi_error.empty()) {
      outcome.stopped = true;
    }
  }
  curl_multi_remove_handle(multi, easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &outcome.http_status);
  return outcome;
}

}  // namespace gpushare::apiclient::detail
