#pragma once
// Live mode's sources for the /inspect document beyond the model (inspect::DocumentSources, which
// the HTTP server hands to inspect::Document): each pod's phase and the configuration warnings,
// read from the cluster sync's caches and the model's DRA objects.

#include "gpushare/http/http_server.h"
#include "gpushare/sync/cluster_sync.h"
#include "gpushare/sync/dra_sync.h"

namespace gpushare::cmd::extender {

// `sync` (and `dra`, when given) must outlive the server; `dra`'s problems join the
// configuration warnings.
void attach_inspect_sources(const sync::ClusterSync& sync, const sync::DraSync* dra,
                            http::HttpServerOptions& http);

}  // namespace gpushare::cmd::extender
