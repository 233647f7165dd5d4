#pragma once
// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1), as values. Decoding
// is in wire_decode.h, encoding in wire_encode.h and filter_reply.h.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/wire/name_list.h"

namespace gpushare::wire {

using kube::Json;

// A Node object of a request kept as its JSON text, which filter echoes back verbatim.
struct NodeText {
  std::string name;       // metadata.name
  std::string_view json;  // the item's text; views the owner's `node_source`
};

struct ExtenderArgs {
  kube::PodInfo pod;
  // nodeCacheCapable: true sends names; false sends whole Node objects (NodeList items, kept as
  // their text and echoed back verbatim for survivors). Exactly one of the two is set.
  std::optional<NameList> node_names;
  std::optional<std::vector<NodeText>> node_texts;
  std::shared_ptr<const std::string> node_source;  // owns the text node_texts view

  bool has_node_objects() const { return node_texts.has_value(); }
  // Names of the offered nodes, whichever form they came in.
  std::vector<std::string> offered_names() const;
};

struct FilterResult {
  NameList node_names;                     // survivors, in offered order
  std::optional<std::vector<Json>> nodes;  // survivors' objects, for callers that hold trees
  // Survivors' objects as JSON text, when the request carried objects.
  std::optional<std::vector<std::string_view>> node_texts;
  std::shared_ptr<const std::string> node_source;  // owns the text node_texts view
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> failed_unresolvable;
  std::string error;
};

// One entry of a HostPriorityList, viewing the list's names: valid while the list is unchanged.
struct HostPriority {
  std::string_view host;
  std::int64_t score = 0;
};

// kube-scheduler's HostPriorityList. The hosts' names are kept in one buffer (a NameList), so a
// reply of 5 000 hosts takes a few allocations, not one per host.
class HostPriorityList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = HostPriority;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = HostPriority;

    const_iterator() = default;
    const_iterator(const HostPriorityList* list, std::size_t index) : list_(list), index_(index) {}
    HostPriority operator*() const { return (*list_)[index_]; }
    const_iterator& operator++() { return ++index_, *this; }
    const_iterator operator++(int) { return {list_, index_++}; }
    friend bool operator==(const_iterator a, const_iterator b) { return a.index_ == b.index_; }

   private:
    const HostPriorityList* list_ = nullptr;
    std::size_t index_ = 0;
  };

  HostPriorityList() = default;
  HostPriorityList(std::initializer_list<HostPriority> priorities);
  // Host i is hosts[i], scored scores[i]; as many scores as hosts.
  HostPriorityList(NameList hosts, std::vector<std::int64_t> scores)
      : hosts_(std::move(hosts)), scores_(std::move(scores)) {}

  // Room for `hosts` hosts whose names take `bytes` bytes in all.
  void reserve(std::size_t hosts, std::size_t bytes) {
    hosts_.reserve(hosts, bytes);
    scores_.reserve(hosts);
  }
  void push_back(std::string_view host, std::int64_t score) {
    hosts_.push_back(host);
    scores_.push_back(score);
  }
  std::size_t size() const { return scores_.size(); }
  bool empty() const { return scores_.empty(); }
  HostPriority operator[](std::size_t i) const { return {hosts_[i], scores_[i]}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  // The names' text in all (for size estimates).
  std::size_t name_bytes() const { return hosts_.text_size(); }

  friend bool operator==(const HostPriorityList&, const HostPriorityList&) = default;

 private:
  NameList hosts_;
  std::vector<std::int64_t> scores_;
};

struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct MetaVictims {
  std::vector<std::string> pod_uids;
  std::int64_t num_pdb_violations = 0;
};

struct PreemptionArgs {
  kube::PodInfo pod;
  // Victims per node, as UIDs (NodeNameToMetaVictims, nodeCacheCapable) or whole pods.
  std::map<std::string, MetaVictims> victims;
  // Whole victim pods when the request carried them (NodeNameToVictims), by UID.
  std::map<std::string, kube::PodInfo> victim_pods;
};

}  // namespace gpushare::wire
