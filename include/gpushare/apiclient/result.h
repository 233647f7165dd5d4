#pragma once
// A value or an ApiError, returned instead of throwing: API calls run on reflector and bind
// threads where an escaping exception would terminate the process.

#include <cassert>
#include <utility>
#include <variant>

#include "gpushare/apiclient/api_error.h"

namespace gpushare::apiclient {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}         // NOLINT
  Result(ApiError error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Preconditions: ok() for value(), !ok() for error(); std::bad_variant_access otherwise.
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const ApiError& error() const { return std::get<1>(state_); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, ApiError> state_;
};

}  // namespace gpushare::apiclient
