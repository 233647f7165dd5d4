#pragma once
// The Alibaba "openb" trace (clusterdata, cluster-trace-gpu-v2023; Weng et al., USENIX ATC'23):
// node and pod lists as CSV, columns found by header name; and the PAI 2020 task list
// (cluster-trace-gpu-v2020; Weng et al., USENIX NSDI'22) as pods of the same kind.

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::sim {

// Every GPU of the trace holds this many units: the paper's milli-GPU.
inline constexpr core::Units kUnitsPerGpu = 1000;

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TracePod {
  std::string name;
  core::PodDemand demand;  // per_gpu in milli-GPU; CPU-only pods have gpu_count 0
  // Seconds from creation to deletion, where the row has both times (the time mode's pod
  // lifetime); the arrival-only simulation ignores it.
  std::optional<double> lifetime;
};

// `sn,cpu_milli,memory_mib,gpu,model`: one NodeSpec per row, memory in MiB, GPUs of 1000 units.
std::vector<core::NodeSpec> parse_nodes_csv(std::string_view text);
// `name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`; gpu_spec is `|`-separated;
// optional `creation_time` and `deletion_time` (seconds) give the pod's lifetime.
std::vector<TracePod> parse_pods_csv(std::string_view text);

// The Alibaba PAI 2020 trace as packaged by the CAFGD project (`task.csv`:
// job_name,task_name,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type; see
// bench/data/pai/README.md). Per row: cpu_milli = plan_cpu x 10 (percent of a core), memory_mib =
// plan_mem x 1024 (GiB), plan_gpu in percent of one GPU: below 100 one GPU's share in milli-GPU
// (plan_gpu x 10, rounded, at least 1), 100 and above whole GPUs (a multiple of 100); empty or 0
// no GPU. Lifetime = end_time - start_time. Rows without both times, or ending before they start,
// are dropped and counted; gpu_type (where the task ran) is not a constraint and status is not
// read. Malformed or out-of-range numbers throw TraceError naming the line.
struct PaiTasks {
  std::vector<TracePod> pods;
  std::size_t dropped_missing_time = 0;
  std::size_t dropped_end_before_start = 0;
};
PaiTasks parse_pai_tasks_csv(std::string_view text);
// True when the header line names the PAI task columns (plan_gpu), not openb's.
bool is_pai_tasks_csv(std::string_view text);

// Throws TraceError naming the file if it cannot be read.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace gpushare::sim
