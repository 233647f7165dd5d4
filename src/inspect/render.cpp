#include "gpushare/inspect/render.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace gpushare::inspect {
namespace {

constexpr std::size_t kMaxListedPods = 20;  // in the summary's notes; -d shows all

bool shown(const NodeView& node) { return node.total > 0; }

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

std::string percent(core::Units used, core::Units total) {
  return fmt::format("{}%", total > 0 ? used * 100 / total : 0);
}

std::string address_of(const NodeView& node) { return node.address.empty() ? "unknown" : node.address; }

std::string dashes(const std::string& block) {
  std::size_t width = 0;
  std::size_t start = 0;
  while (start < block.size()) {
    const auto end = block.find('\n', start);
    const auto stop = end == std::string::npos ? block.size() : end;
    width = std::max(width, stop - start);
    start = stop + 1;
  }
  return std::string(width, '-') + "\n";
}

struct PodRef {
  const NodeView* node;
  const PodView* pod;
  int gpu;  // -1: no index
};

std::vector<PodRef> not_running_pods(const ClusterView& view) {
  std::vector<PodRef> pods;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    for (const auto& gpu : node.gpus) {
      for (const auto& pod : gpu.pods) {
        if (pod.not_running_yet()) pods.push_back({&node, &pod, gpu.id});
      }
    }
    for (const auto& pod : node.unindexed) {
      if (pod.not_running_yet()) pods.push_back({&node, &pod, -1});
    }
  }
  return pods;
}

// Explains every mark the tables used; empty when there is nothing to explain.
std::string notes(const ClusterView& view, bool list_pods, bool pending_column) {
  std::vector<std::string> lines;
  std::vector<std::string> cordoned;
  std::vector<std::string> unhealthy;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    if (node.unschedulable) cordoned.push_back(node.name);
    for (const auto& gpu : node.gpus) {
      if (!gpu.healthy) unhealthy.push_back(fmt::format("{}/GPU{}", node.name, gpu.id));
    }
  }
  if (!cordoned.empty()) {
    lines.push_back(fmt::format("(cordoned): node is unschedulable and takes no new pods: {}",
                                fmt::join(cordoned, ", ")));
  }
  if (!unhealthy.empty()) {
    lines.push_back(fmt::format(
        "(unhealthy): GPU listed in its node's unhealthy-gpu-<node> ConfigMap, takes no new pods: {}",
        fmt::join(unhealthy, ", ")));
  }
  if (pending_column) {
    lines.push_back("PENDING(Allocated): memory of pods bound without a GPU index (no ALIYUN_COM_GPU_MEM_IDX)");
  }
  if (list_pods) {
    const auto pods = not_running_pods(view);
    if (!pods.empty()) {
      lines.push_back(fmt::format("Pods holding GPU memory but not running yet: {}", pods.size()));
      for (std::size_t i = 0; i < pods.size() && i < kMaxListedPods; ++i) {
        const auto& ref = pods[i];
        const std::string where =
            ref.gpu >= 0 ? fmt::format("{} GPU{}", ref.node->name, ref.gpu) : ref.node->name;
        lines.push_back(fmt::format("  {}/{} on {} ({})", ref.pod->namespace_name, ref.pod->name, where,
                                    ref.pod->status()));
      }
      if (pods.size() > kMaxListedPods) {
        lines.push_back(fmt::format("  ... and {} more (see -d)", pods.size() - kMaxListedPods));
      }
    }
  }
  for (const auto& node : view.nodes) {
    if (!node.misconfiguration.empty()) {
      lines.push_back(fmt::format("Misconfigured node {} takes no GPU pods: {}", node.name, node.misconfiguration));
    }
  }
  if (lines.empty()) return {};
  std::string out = "\n";
  for (const auto& line : lines) out += line + "\n";
  return out;
}

std::string cluster_line(const ClusterView& view) {
  core::Units used = 0;
  core::Units total = 0;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    used += node.used;
    total += node.total;
  }
  return fmt::format("Allocated/Total GPU Memory In Cluster: {}/{} ({})\n", used, total, percent(used, total));
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

std::string align_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    // The last cell of a row does not take part in alignment (as with Go's tabwriter).
    for (std::size_t i = 0; i + 1 < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] + 2 - row[i].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_summary(const ClusterView& view, std::string_view unit) {
  int columns = 0;
  bool pending = false;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    columns = std::max(columns, gpu_columns(node));
    pending = pending || !node.unindexed.empty();
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"NAME", "IPADDRESS"};
  for (int i = 0; i < columns; ++i) header.push_back(fmt::format("GPU{}(Allocated/Total)", i));
  if (pending) header.push_back("PENDING(Allocated)");
  header.push_back(fmt::format("GPU Memory({})", unit));
  rows.push_back(std::move(header));
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    std::vector<std::string> row{node.unschedulable ? node.name + "(cordoned)" : node.name, address_of(node)};
    for (int i = 0; i < columns; ++i) {
      const GpuView* gpu = gpu_with_id(node, i);
      if (gpu == nullptr) {
        row.emplace_back("-");  // the node has fewer GPUs than the widest node
      } else {
        row.push_back(fmt::format("{}/{}{}", gpu->used, gpu->total, gpu->healthy ? "" : "(unhealthy)"));
      }
    }
    if (pending) row.push_back(node.unindexed.empty() ? "" : std::to_string(node.unindexed_used()));
    row.push_back(fmt::format("{}/{}", node.used, node.total));
    rows.push_back(std::move(row));
  }
  const std::string table = align_columns(rows);
  return table + dashes(table) + cluster_line(view) + notes(view, true, pending);
}

std::string render_details(const ClusterView& view) {
  std::string out;
  bool any_pending = false;
  for (const auto& node : view.nodes) {
    if (!shown(node)) continue;
    std::vector<std::vector<std::string>> about{{"NAME:", node.name}, {"IPADDRESS:", address_of(node)}};
    if (!node.gpu_model.empty()) about.push_back({"MODEL:", node.gpu_model});
    if (node.unschedulable) about.push_back({"STATUS:", "cordoned (takes no new pods)"});
    std::vector<std::string> bad;
    for (const auto& gpu : node.gpus) {
      if (!gpu.healthy) bad.push_back(fmt::format("GPU{}", gpu.id));
    }
    if (!bad.empty()) about.push_back({"UNHEALTHY:", fmt::format("{} (take no new pods)", fmt::join(bad, ", "))});

    const int columns = gpu_columns(node);
    const bool pending = !node.unindexed.empty();
    any_pending = any_pending || pending;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header{"NAME", "NAMESPACE"};
    for (int i = 0; i < columns; ++i) {
      const GpuView* gpu = gpu_with_id(node, i);
      header.push_back(fmt::format("GPU{}(Allocated{})", i, gpu != nullptr && !gpu->healthy ? ",unhealthy" : ""));
    }
    if (pending) header.push_back("PENDING(Allocated)");
    header.push_back("STATUS");
    rows.push_back(std::move(header));

    // One row per pod (by UID): a pod may hold several GPUs.
    struct Row {
      const PodView* pod;
      std::vector<core::Units> per_gpu;
      core::Units pending = 0;
    };
    std::vector<Row> pod_rows;
    std::map<std::string, std::size_t> index;
    auto row_for = [&](const PodView& pod) -> Row& {
      const std::string key = pod.uid.empty() ? pod.namespace_name + "/" + pod.name : pod.uid;
      auto [it, added] = index.try_emplace(key, pod_rows.size());
      if (added) pod_rows.push_back({&pod, std::vector<core::Units>(static_cast<std::size_t>(columns), 0), 0});
      return pod_rows[it->second];
    };
    for (const auto& gpu : node.gpus) {
      for (const auto& pod : gpu.pods) {
        if (gpu.id >= 0 && gpu.id < columns) row_for(pod).per_gpu[static_cast<std::size_t>(gpu.id)] += pod.used;
      }
    }
    for (const auto& pod : node.unindexed) row_for(pod).pending += pod.used;
    for (const auto& r : pod_rows) {
      std::vector<std::string> row{r.pod->name, r.pod->namespace_name};
      for (auto used : r.per_gpu) row.push_back(std::to_string(used));
      if (pending) row.push_back(std::to_string(r.pending));
      row.push_back(r.pod->status());
      rows.push_back(std::move(row));
    }
    const std::string table = align_columns(rows);
    const std::string totals = align_columns({{"Allocated:", fmt::format("{} ({})", node.used, percent(node.used, node.total))},
                                              {"Total:", fmt::format("{}", node.total)}});
    out += "\n" + align_columns(about) + "\n" + table + totals + dashes(table + totals);
  }
  out += "\n" + cluster_line(view) + notes(view, false, any_pending);
  return out;
}

}  // namespace gpushare::inspect
