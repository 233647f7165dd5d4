#pragma once
// The plugin's tables, in the layout of Aliyun's kubectl-inspect-gpushare:
//   summary: NAME IPADDRESS GPU0(Allocated/Total) ... [PENDING(Allocated)] GPU Memory(<unit>)
//            then "Allocated/Total GPU Memory In Cluster: A/T (P%)"
//   details: per node, one row per pod with its memory on each GPU.
// Differences from the original, all additive: cordoned nodes and unhealthy GPUs are marked in
// their cells, a STATUS column shows pods that are not running yet, and a notes block explains
// the marks. Columns are separated by at least two spaces; no line has trailing spaces.

#include <string>
#include <string_view>
#include <vector>

#include "gpushare/inspect/view.h"

namespace gpushare::inspect {

// The memory unit for the header: "GiB" or "MiB". The device plugin does not publish its
// --memory-unit, so like the original plugin we guess from the size of one GPU (more than 100
// units per GPU means MiB).
std::string guess_unit(const ClusterView& view);

// Lays out rows as columns padded to the widest cell plus two spaces; the last cell of a row
// is not padded.
std::string align_columns(const std::vector<std::vector<std::string>>& rows);

std::string render_summary(const ClusterView& view, std::string_view unit);
// Plain numbers, as in the original; the unit is in the summary's header.
std::string render_details(const ClusterView& view);

}  // namespace gpushare::inspect
