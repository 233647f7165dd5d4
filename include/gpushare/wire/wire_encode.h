#pragma once
// The extender replies, as kube-scheduler reads them (the Go field names).

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/wire/wire_types.h"

namespace gpushare::wire {

std::string encode_filter_result(const FilterResult& result);
std::string encode_priorities(const HostPriorityList& priorities);
std::string encode_binding_result(std::string_view error);
std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims);
// {"Error": message}: the body of any failed call.
std::string encode_error(std::string_view error);

}  // namespace gpushare::wire
