#include "gpushare/apiclient/cluster_config.h"

#include <cstdlib>

namespace gpushare::apiclient {

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace gpushare::apiclient
