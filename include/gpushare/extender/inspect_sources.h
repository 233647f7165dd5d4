#pragma once
// Live mode's contributions to /inspect beyond the model: each pod's phase and the configuration
// warnings, read from the cluster sync's caches.

#include "gpushare/extender/http/http_server.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::extender {

// `sync` must outlive the server.
void attach_inspect_sources(const sync::ClusterSync& sync, HttpServerOptions& http);

}  // namespace gpushare::extender
