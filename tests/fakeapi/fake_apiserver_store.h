#pragma once
// The fake API server's storage: current objects, one global resourceVersion counter and a
// bounded event history from which watches are fed and old list snapshots are rebuilt.
// Not thread-safe: FakeApiServer guards it with its single mutex.

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing::fakeapi {

enum class EventType { Added, Modified, Deleted };
std::string_view to_string(EventType type);  // "ADDED", ...

struct HistoryEvent {
  std::uint64_t rv = 0;
  Resource resource = Resource::Pods;
  std::string key;
  EventType type = EventType::Added;
  nlohmann::json object;    // new state; for Deleted the last state stamped with the deletion RV
  nlohmann::json previous;  // state before the event; null for Added
};

// Store key, ordered like etcd's keys: "<namespace>/<name>" or "<name>".
std::string make_key(Resource resource, std::string_view ns, std::string_view name);
std::string key_of(Resource resource, const nlohmann::json& object);

using ObjectMap = std::map<std::string, nlohmann::json, std::less<>>;

class ObjectStore {
 public:
  ObjectStore(std::uint64_t initial_rv, std::size_t max_history);

  std::uint64_t current_rv() const noexcept { return current_rv_; }
  // History at or before this RV is gone: watches from older RVs and exact reads get 410.
  std::uint64_t compacted_rv() const noexcept { return compacted_rv_; }

  const nlohmann::json* find(Resource resource, std::string_view key) const;
  const ObjectMap& objects(Resource resource) const;

  // Each write takes the next RV, stamps metadata.resourceVersion and records one event.
  const nlohmann::json& add(Resource resource, nlohmann::json object);
  const nlohmann::json& modify(Resource resource, nlohmann::json object);
  nlohmann::json erase(Resource resource, std::string_view key);  // returns the DELETED object

  // The objects of `resource` as they were at `rv` (compacted_rv() <= rv <= current_rv()).
  ObjectMap snapshot_at(Resource resource, std::uint64_t rv) const;

  // Events with rv > `after`, oldest first.
  std::deque<HistoryEvent>::const_iterator events_after(std::uint64_t after) const;
  std::deque<HistoryEvent>::const_iterator history_end() const { return history_.cend(); }

  void set_max_history(std::size_t max_history);
  void compact(std::uint64_t rv);
  // Takes an RV without an event: etcd's revision is global, so writes to kinds this fake does
  // not serve (Events, Endpoints) move it past every watch's last RV. Returns the new RV.
  std::uint64_t skip_rv();
  // Drops every object and all history; the RV keeps counting so old RVs read as compacted.
  void clear();

 private:
  std::uint64_t next_rv();
  void record(HistoryEvent event);

  std::uint64_t current_rv_;
  std::uint64_t compacted_rv_;
  std::size_t max_history_;
  std::map<Resource, ObjectMap> objects_;
  std::deque<HistoryEvent> history_;
};

// Helpers for metadata fields that may be absent.
std::string string_at(const nlohmann::json& object, std::string_view a, std::string_view b = {},
                      std::string_view c = {});
std::string name_of(const nlohmann::json& object);
std::string namespace_of(const nlohmann::json& object);
std::uint64_t rv_of(const nlohmann::json& object);  // 0 if absent or not numeric

// RFC 3339 UTC timestamps and random UUIDs as the apiserver writes them.
std::string rfc3339_now(std::int64_t offset_seconds = 0);
std::string new_uid();

}  // namespace gpushare::testing::fakeapi
