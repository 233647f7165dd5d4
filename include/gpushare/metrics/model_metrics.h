#pragma once
// The model's gauges on /metrics (nodes, GPUs, pods, reservations, memory per node and GPU),
// built from a snapshot at scrape time, so a node's series go when the node goes.

#include <cstddef>
#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/metrics/metric_registry.h"

namespace gpushare::metrics {

// What /metrics reports about the model, copied out under the store's shared lock so that
// formatting the text happens after the lock is released. Labels stay bounded: one series per
// GPU node and per GPU; CPU-only nodes are left out.
struct GpuGauge {
  int index = 0;
  core::Units capacity = 0;
  core::Units allocated = 0;
  bool healthy = true;
};

struct NodeGauge {
  std::string name;
  bool unschedulable = false;
  bool misconfigured = false;
  core::Units capacity = 0;
  core::Units allocated = 0;  // includes pods bound without a GPU index
  std::vector<GpuGauge> gpus;
};

struct ModelGauges {
  std::vector<NodeGauge> nodes;  // sorted by name
  std::size_t pods = 0;          // pods holding GPU memory
  std::size_t assumed_pods = 0;  // bound by us, not yet seen bound by the API server
  std::size_t dra_holdings = 0;  // DRA claims' allocations holding memory of a GPU in the model
  // Reservations by ledger state (binding, accepted, unresolved).
  std::size_t reservations_binding = 0;
  std::size_t reservations_accepted = 0;
  std::size_t reservations_unresolved = 0;
  core::Units capacity = 0;
  core::Units allocated = 0;
};

// Call with the model under the store's (shared) lock.
ModelGauges model_gauges(const core::ClusterModel& model);
ModelGauges model_gauges(const core::ClusterModel& model, const core::ReservationLedger& ledger);

// The gauges as families, for MetricRegistry::render's `extra`.
void collect_model(std::vector<prometheus::MetricFamily>& out, const ModelGauges& model);

}  // namespace gpushare::metrics
