#include "gpushare/inspect/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "gpushare/inspect/tabwriter.h"

namespace gpushare::inspect {
namespace {

constexpr std::size_t kMaxListedPods = 20;  // in the notes; -d shows all

// The original lists nodes that advertise GPU memory.
bool shown(const NodeView& node) {
  return node.total > 0;
}

const GpuView* gpu_with_id(const NodeView& node, int id) {
  for (const auto& gpu : node.gpus) {
    if (gpu.id == id) return &gpu;
  }
  return nullptr;
}

int gpu_columns(const NodeView& node) {
  int columns = 0;
  for (const auto& gpu : node.gpus) columns = std::max(columns, gpu.id + 1);
  return columns;
}

// As the original computes it: int64(float64(used) / float64(total) * 100), truncated after
// the floating-point product (29/100 prints 28%), so that the numbers match too.
std::int64_t percent(core::Units used, core::Units total) {
  if (total <= 0) return 0;
  return static_cast<std::int64_t>(static_cast<double>(used) / static_cast<double>(total) * 100);
}

std::string address_of(const NodeView& node) {
  return node.address.empty() ? "unknown" : node.address;
}

struct PodRef {
  const NodeView* node;
  const PodView* pod;
  int gpu;  // -1: no index
};

template <typename Predicate>
std::vector<PodRef> pods_where(const ClusterView& view, Predicate&& wanted) {
  std::vector<PodRef> pods;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    for (const auto& gpu : node.gpus) {
      for (const auto& pod : gpu.pods) {
        if (wanted(pod)) pods.push_back({&node, &pod, gpu.id});
      }
    }
    for (const auto& pod : node.unindexed) {
      if (wanted(pod)) pods.push_back({&node, &pod, -1});
    }
  }
  return pods;
}

std::vector<PodRef> not_running_pods(const ClusterView& view) {
  return pods_where(view, [](const PodView& pod) { return pod.not_running_yet(); });
}

std::string where(const PodRef& ref) {
  return ref.gpu >= 0 ? fmt::format("{} GPU{}", ref.node->name, ref.gpu) : ref.node->name;
}

bool any_unindexed(const ClusterView& view) {
  return std::any_of(view.nodes.begin(), view.nodes.end(),
                     [](const NodeView& node) { return shown(node) && !node.unindexed.empty(); });
}

}  // namespace

std::string guess_unit(const ClusterView& view) {
  for (const auto& node : view.nodes) {
    for (const auto& gpu : node.gpus) {
      if (gpu.total > 0) return gpu.total > 100 ? "MiB" : "GiB";
    }
  }
  return "GiB";
}

// The format strings below are those of the original's displaySummary (cmd/inspect/display.go
// of AliyunContainerService/gpushare-device-plugin), fed through the same tab writer.
std::string render_summary(const ClusterView& view, std::string_view unit) {
  int columns = 0;
  for (const auto& node : view.nodes) {
    if (shown(node)) columns = std::max(columns, gpu_columns(node));
  }
  const bool pending = any_unindexed(view);
  std::string text = "NAME\tIPADDRESS\t";
  for (int i = 0; i < columns; ++i) text += fmt::format("GPU{}(Allocated/Total)\t", i);
  if (pending) text += "PENDING(Allocated)\t";
  text += fmt::format("GPU Memory({})\n", unit);
  std::size_t rule = 0;
  core::Units used = 0;
  core::Units total = 0;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    std::string row = fmt::format("{}\t{}\t", node.name, address_of(node));
    for (int i = 0; i < columns; ++i) {
      const GpuView* gpu = gpu_with_id(node, i);
      // A GPU the node lacks reads 0/0, as in the original.
      row += gpu == nullptr ? "0/0\t" : fmt::format("{}/{}\t", gpu->used, gpu->total);
    }
    if (pending) row += node.unindexed.empty() ? "\t" : fmt::format("{}\t", node.unindexed_used());
    row += fmt::format("{}/{}\n", node.used, node.total);
    // The original's rule is as long as its first node's row before alignment, plus 20.
    if (rule == 0) rule = row.size() + 20;
    text += row;
    used += node.used;
    total += node.total;
  }
  text += std::string(rule, '-') + "\n";
  text += "Allocated/Total GPU Memory In Cluster:\n";
  text += fmt::format("{}/{} ({}%)\t\n", used, total, percent(used, total));
  return go_tabwriter(text);
}

// displayDetails' format strings, plus one cell the original leaves empty: each pod row ends
// with its STATUS (the header with "STATUS"), after the last tab, so no column moves.
std::string render_details(const ClusterView& view) {
  std::string text;
  std::size_t rule = 0;
  core::Units used_in_cluster = 0;
  core::Units total_in_cluster = 0;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    text += fmt::format("\nNAME:\t{}\nIPADDRESS:\t{}\n\n", node.name, address_of(node));
    const int columns = gpu_columns(node);
    const bool pending = !node.unindexed.empty();
    text += "NAME\tNAMESPACE\t";
    for (int i = 0; i < columns; ++i) text += fmt::format("GPU{}(Allocated)\t", i);
    if (pending) text += "Pending(Allocated)\t";
    text += "STATUS\n";

    // One row per pod (by UID): a pod may hold several GPUs. Then one per DRA claim (a claim
    // may hold several GPUs too): the pod it is reserved for in NAME, the claim in STATUS.
    struct Row {
      std::string name;
      std::string namespace_name;
      std::string status;
      std::vector<core::Units> per_gpu;
      core::Units pending = 0;
    };
    std::vector<Row> rows_by_holder;
    std::map<std::string, std::size_t> index;
    auto row_for = [&](const std::string& key, std::string name, std::string namespace_name,
                       std::string status) -> Row& {
      auto [it, added] = index.try_emplace(key, rows_by_holder.size());
      if (added)
        rows_by_holder.push_back({std::move(name), std::move(namespace_name), std::move(status),
                                  std::vector<core::Units>(static_cast<std::size_t>(columns), 0),
                                  0});
      return rows_by_holder[it->second];
    };
    auto pod_row = [&](const PodView& pod) -> Row& {
      return row_for("pod:" + (pod.uid.empty() ? pod.namespace_name + "/" + pod.name : pod.uid),
                     pod.name, pod.namespace_name, pod.status());
    };
    for (const auto& gpu : node.gpus) {
      for (const auto& pod : gpu.pods) {
        if (gpu.id >= 0 && gpu.id < columns)
          pod_row(pod).per_gpu[static_cast<std::size_t>(gpu.id)] += pod.used;
      }
    }
    for (const auto& pod : node.unindexed) pod_row(pod).pending += pod.used;
    for (const auto& gpu : node.gpus) {
      if (gpu.id < 0 || gpu.id >= columns) continue;
      for (const auto& claim : gpu.dra_claims) {
        Row& row = row_for("dra:" + claim.claim, claim.pod.empty() ? "-" : claim.pod_name(),
                           claim.claim_namespace(), "DRA claim " + claim.claim_name());
        row.per_gpu[static_cast<std::size_t>(gpu.id)] += claim.used;
      }
    }
    std::string rows;
    std::size_t original_length = 0;  // of the rows as the original writes them (no STATUS)
    for (const auto& r : rows_by_holder) {
      std::string row = fmt::format("{}\t{}\t", r.name, r.namespace_name);
      for (auto used : r.per_gpu) row += fmt::format("{}\t", used);
      if (pending) row += fmt::format("{}\t", r.pending);
      original_length += row.size() + 1;
      rows += row + r.status + "\n";
    }
    // The original's rule: its first node's pod rows before alignment, plus 10.
    if (rule == 0) rule = original_length + 10;
    text += rows;
    text += fmt::format("Allocated :\t{} ({}%)\t\n", node.used, percent(node.used, node.total));
    text += fmt::format("Total :\t{} \t\n", node.total);
    text += std::string(rule, '-') + "\n";
    used_in_cluster += node.used;
    total_in_cluster += node.total;
  }
  text += "\n\nAllocated/Total GPU Memory In Cluster:\t";
  text += fmt::format("{}/{} ({}%)\t\n", used_in_cluster, total_in_cluster,
                      percent(used_in_cluster, total_in_cluster));
  return go_tabwriter(text);
}

std::string render_notes(const ClusterView& view, bool details) {
  std::vector<std::string> lines;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    if (node.unschedulable)
      lines.push_back(fmt::format("node {} is cordoned: it takes no new pods", node.name));
  }
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    for (const auto& gpu : node.gpus) {
      if (!gpu.healthy) {
        lines.push_back(fmt::format(
            "GPU{} of node {} is unhealthy (listed in its unhealthy-gpu-{} ConfigMap): it "
            "takes no new pods",
            gpu.id, node.name, node.name));
      }
    }
  }
  if (!details && any_unindexed(view)) {
    lines.push_back(
        "PENDING(Allocated) is memory of pods bound without a GPU index (no "
        "ALIYUN_COM_GPU_MEM_IDX)");
  }
  if (!details) {
    // DRA-held memory is in the tables' Allocated figures; say whose it is without a column
    // the original lacks.
    core::Units dra_used = 0;
    std::size_t dra_nodes = 0;
    for (const auto& node : view.nodes) {
      if (!shown(node) || node.dra_used() == 0) continue;
      dra_used += node.dra_used();
      ++dra_nodes;
    }
    if (dra_nodes > 0) {
      lines.push_back(fmt::format(
          "Allocated includes GPU memory held by DRA ResourceClaims: {} on {} node{} (-d lists "
          "each claim and its pod)",
          dra_used, dra_nodes, dra_nodes == 1 ? "" : "s"));
    }
  }
  if (details) {
    // Which DRA device each GPU column of a DRA node is (driver pool/device).
    for (const auto& node : view.nodes) {
      if (!shown(node)) continue;
      std::vector<std::string> devices;
      for (const auto& gpu : node.gpus) {
        if (!gpu.dra_device.empty())
          devices.push_back(fmt::format("GPU{} {}", gpu.id, gpu.dra_device));
      }
      if (!devices.empty()) {
        lines.push_back(fmt::format("node {}: GPUs published through DRA (pool/device): {}",
                                    node.name, fmt::join(devices, ", ")));
      }
    }
  }
  if (!details) {
    const auto pods = not_running_pods(view);
    for (std::size_t i = 0; i < pods.size() && i < kMaxListedPods; ++i) {
      const auto& ref = pods[i];
      lines.push_back(fmt::format("pod {}/{} on {} holds GPU memory but is not running yet ({})",
                                  ref.pod->namespace_name, ref.pod->name, where(ref),
                                  ref.pod->status()));
    }
    if (pods.size() > kMaxListedPods) {
      lines.push_back(fmt::format("... and {} more pods not running yet (see -d)",
                                  pods.size() - kMaxListedPods));
    }
  }
  if (details) {
    // The per-model picture, where pins make it matter: more than one model, or pinned pods.
    bool pinned = false;
    for (const PodRef& ref :
         pods_where(view, [](const PodView& pod) { return !pod.model_pin.empty(); })) {
      pinned = true;
      const PodView& pod = *ref.pod;
      lines.push_back(fmt::format(
          "pod {}/{} on {} is pinned to GPU models: {}{}", pod.namespace_name, pod.name, where(ref),
          pod.model_pin,
          pod.allowed_models.empty()
              ? ""
              : fmt::format(" (in this cluster: {})", fmt::join(pod.allowed_models, ", "))));
    }
    if (view.models.size() > 1 || pinned) {
      for (const ModelView& m : view.models) {
        lines.push_back(fmt::format(
            "GPU model {}: {} node{}, {} GPU{}, {}/{} memory allocated, {} pinned pod{}{}",
            m.model.empty() ? "(no label)" : m.model, m.nodes, m.nodes == 1 ? "" : "s", m.gpus,
            m.gpus == 1 ? "" : "s", m.used, m.total, m.pinned_pods, m.pinned_pods == 1 ? "" : "s",
            m.learned_pinned_weight
                ? fmt::format(", learned pinned demand {:.1f}%", *m.learned_pinned_weight * 100)
                : ""));
      }
    }
  }
  std::string out;
  for (const auto& line : lines) out += "note: " + line + "\n";
  for (const auto& node : view.nodes) {
    if (!node.misconfiguration.empty()) {
      out += fmt::format("warning: node {} is misconfigured and takes no GPU pods: {}\n", node.name,
                         node.misconfiguration);
    }
  }
  for (const auto& warning : view.config_warnings) out += "warning: " + warning + "\n";
  return out;
}

}  // namespace gpushare::inspect
