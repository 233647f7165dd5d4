#pragma once
// A ClusterModel fed DRA objects from their JSON, for tests of the model's DRA accounting: each
// helper upserts one object through the kube decoders, as live mode's DRA sync does.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/dra_objects.h"

namespace gpushare::testing {

// A Node object with no GPUs of its own (DRA slices give it its GPUs).
inline core::NodeSpec plain_node(std::string name) {
  core::NodeSpec spec;
  spec.name = std::move(name);
  return spec;
}

class DraModelTest : public ::testing::Test {
 protected:
  void slice(const std::string& json) {
    model.update_dra(
        [&](core::DraState& dra) { dra.upsert_slice(kube::parse_resource_slice(json)); });
  }
  void claim(const std::string& json) {
    model.update_dra(
        [&](core::DraState& dra) { dra.upsert_claim(kube::parse_resource_claim(json)); });
  }
  void device_class(const std::string& json) {
    model.update_dra(
        [&](core::DraState& dra) { dra.upsert_class(kube::parse_device_class(json)); });
  }
  // The model's DRA warnings, a node counting as known when the model has it.
  std::vector<std::string> warnings() const {
    return model.dra().warnings(
        [&](std::string_view node) { return model.find_node(node) != nullptr; });
  }
  // Whether a warning names both `a` and `b`.
  bool warned(std::string_view a, std::string_view b) const {
    const auto found = warnings();
    return std::any_of(found.begin(), found.end(), [&](const std::string& w) {
      return w.find(a) != std::string::npos && w.find(b) != std::string::npos;
    });
  }
  core::ClusterModel model;
};

}  // namespace gpushare::testing
