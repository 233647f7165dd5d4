#pragma once
// The plugin's tables, in the layout of Aliyun's kubectl-inspect-gpushare (its
// cmd/inspect/display.go), byte for byte, so that scripts reading the original's output read
// ours:
//   summary: NAME IPADDRESS GPU0(Allocated/Total) ... [PENDING(Allocated)] GPU Memory(<unit>),
//            a dashed rule, "Allocated/Total GPU Memory In Cluster:" and, last, "A/T (P%)".
//   details: per node NAME:/IPADDRESS:, one row per pod with its memory on each GPU, the node's
//            Allocated/Total, a rule; last, "Allocated/Total GPU Memory In Cluster:  A/T (P%)".
// The additions to stdout: -d ends each pod row with its STATUS (Running, Pending, Assumed),
// in the cell the original leaves empty, and lists each DRA ResourceClaim holding memory of a
// node's GPUs as a row of its own (NAME the pod it is reserved for, "-" for none; NAMESPACE the
// claim's; STATUS "DRA claim <name>"), so that the rows add up to the node's Allocated, which
// counts DRA-held memory as the GPU columns of the summary do. Everything else we know
// (cordoned nodes, unhealthy GPUs, pods not running yet, misconfigured nodes, DRA devices,
// configuration warnings) is in render_notes(), which the CLI writes to stderr, and in -o json.
// docs/user-guide.md lists the differences.

#include <string>
#include <string_view>

#include "gpushare/inspect/view.h"

namespace gpushare::inspect {

// The memory unit for the header: "GiB" or "MiB". The device plugin does not publish its
// --memory-unit, so like the original plugin we guess from the size of one GPU (more than 100
// units per GPU means MiB).
std::string guess_unit(const ClusterView& view);

std::string render_summary(const ClusterView& view, std::string_view unit);
std::string render_details(const ClusterView& view);
// One line per mark the tables do not show ("note: ..."), and per problem ("warning: ...");
// empty when there is nothing to say.
std::string render_notes(const ClusterView& view, bool details);

}  // namespace gpushare::inspect
