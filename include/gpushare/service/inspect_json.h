#pragma once
// The parts of the /inspect JSON that belong to the service: recent rejections and
// configuration warnings. The model's part is gpushare/inspect/snapshot.h.

#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/service/config_warnings.h"
#include "gpushare/service/rejection_log.h"

namespace gpushare::service {

kube::Json rejections_json(const std::vector<Rejection>& rejections);
// /inspect's "configWarnings": [{object, kind, key, value, message}].
kube::Json config_warnings_json(const std::vector<ConfigWarning>& warnings);

}  // namespace gpushare::service
