#include "cmd/extender/inspect_sources.h"

#include <optional>
#include <string>
#include <string_view>

namespace gpushare::cmd::extender {

void attach_inspect_sources(const sync::ClusterSync& sync, const sync::DraSync* dra,
                            http::HttpServerOptions& http) {
  http.pod_phase = [&sync](std::string_view uid, std::string_view namespace_name,
                           std::string_view name) -> std::optional<std::string> {
    const auto pod = sync.cached_pod(namespace_name, name);
    if (!pod || pod->uid != uid) return std::nullopt;  // another pod now has the name
    return pod->phase;
  };
  http.config_warnings = [&sync, dra] {
    std::vector<service::ConfigWarning> warnings = sync.config_warnings().all();
    if (dra != nullptr) {
      for (service::ConfigWarning& warning : dra->config_warnings())
        warnings.push_back(std::move(warning));
    }
    return warnings;
  };
}

}  // namespace gpushare::cmd::extender
