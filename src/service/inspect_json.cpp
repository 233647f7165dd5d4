#include "gpushare/service/inspect_json.h"

namespace gpushare::service {

using kube::Json;

Json rejections_json(const std::vector<Rejection>& rejections) {
  Json list = Json::array();
  for (const auto& r : rejections) {
    list.push_back(
        {{"timeUnixNano", r.time_ns}, {"pod", r.pod}, {"node", r.node}, {"reason", r.reason}});
  }
  return list;
}

Json config_warnings_json(const std::vector<ConfigWarning>& warnings) {
  Json list = Json::array();
  for (const auto& w : warnings) {
    list.push_back({{"object", w.object},
                    {"kind", w.kind},
                    {"key", w.key},
                    {"value", w.value},
                    {"message", w.message},
                    {"node", w.node}});
  }
  return list;
}

}  // namespace gpushare::service
