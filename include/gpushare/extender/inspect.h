#pragma once
// The parts of the /inspect JSON that belong to the service: recent rejections and
// configuration warnings. The model's part is gpushare/inspect/snapshot.h.

#include <vector>

#include "gpushare/extender/config_warnings.h"
#include "gpushare/extender/rejection_log.h"
#include "gpushare/inspect/snapshot.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::extender {

// Named here too so that the HTTP server's routes read as before (http_server.cpp is being
// reworked elsewhere; these keep that file untouched).
using inspect::add_fragmentation;
using inspect::add_pod_phases;
using inspect::inspect_cluster;
using inspect::inspect_node;
using inspect::PodPhaseLookup;

kube::Json rejections_json(const std::vector<Rejection>& rejections);
// /inspect's "configWarnings": [{object, kind, key, value, message}].
kube::Json config_warnings_json(const std::vector<ConfigWarning>& warnings);

}  // namespace gpushare::extender
