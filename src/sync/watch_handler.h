#pragma once
// The reflector handler every list/watch of src/sync uses (private to src/sync): one resource
// kind, told by its parts (WatchKind), with each object decoded once and handed on decoded. The
// reflector (apiclient/reflector.h) owns the protocol: resourceVersions, bookmarks, relists on
// 410 Gone; the kind only says what a listed object, a complete list and an event do.

#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gpushare/apiclient/reflector.h"
#include "gpushare/apiclient/watch_event.h"
#include "gpushare/json/document.h"

namespace gpushare::sync {

// One resource kind, as decoded T. Every part is called on the reflector's thread only.
template <typename T>
struct WatchKind {
  using Object = T;
  // An object that does not decode is logged as "ignoring <what>: <reason>" and skipped.
  std::string what;
  // Decodes one object: nullopt for an object of no concern to the kind (skipped without a
  // word); throws (a std::exception) when it is unusable.
  std::function<std::optional<T>(const json::Value& object)> decode;
  // Called for each object that does not decode, before its log line. May be empty.
  std::function<void()> unusable;
  // A list starts: drops whatever an earlier, failed list staged. May be empty.
  std::function<void()> begin;
  // One listed object, staged until the list is complete.
  std::function<void(T object)> stage;
  // The list is complete at resourceVersion `rv`: what was staged replaces what the model holds.
  std::function<void(const std::string& rv)> replace;
  // One watch event: ADDED, MODIFIED or DELETED (the object's last state).
  std::function<void(apiclient::WatchEventType type, T object)> apply;
};

template <typename T>
class WatchHandler final : public apiclient::ReflectorHandler {
 public:
  explicit WatchHandler(WatchKind<T> kind) : kind_(std::move(kind)) {}

  void on_list_begin() override {
    if (kind_.begin) kind_.begin();
  }
  void on_list_item(const json::Value& object) override {
    if (auto decoded = decode(object)) kind_.stage(std::move(*decoded));
  }
  void on_replace(const std::string& rv) override { kind_.replace(rv); }
  void on_event(apiclient::WatchEventType type, const json::Value& object) override {
    if (auto decoded = decode(object)) kind_.apply(type, std::move(*decoded));
  }

 private:
  std::optional<T> decode(const json::Value& object) {
    try {
      return kind_.decode(object);
    } catch (const std::exception& e) {
      if (kind_.unusable) kind_.unusable();
      spdlog::warn("ignoring {}: {}", kind_.what, e.what());
      return std::nullopt;
    }
  }

  WatchKind<T> kind_;
};

// A reflector over the collection at `path` (logged as `name`), its options passed through `tune`
// when set, feeding `handler`, which must outlive it. Not started.
inline std::unique_ptr<apiclient::Reflector> make_reflector(
    apiclient::ApiClient& client, std::string path, std::string name,
    const std::function<void(apiclient::ReflectorOptions&)>& tune,
    apiclient::ReflectorHandler& handler) {
  apiclient::ReflectorOptions options;
  options.path = std::move(path);
  options.name = std::move(name);
  if (tune) tune(options);
  return std::make_unique<apiclient::Reflector>(client, std::move(options), handler);
}

}  // namespace gpushare::sync
