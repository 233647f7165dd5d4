#pragma once
// Polls `condition` until it holds or `timeout` passes. Not a timing assertion: the deadline
// is generous and only bounds a hang.

#include <chrono>
#include <thread>

namespace gpushare::testing {

template <typename Fn>
bool eventually(Fn condition, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace gpushare::testing
