// preempt request bodies (ExtenderPreemptionArgs, both victim forms).

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "gpushare/wire/wire_types.h"

using namespace gpushare;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const kube::ResourceNames names;
  wire::PreemptionArgs args;
  if (!fuzz::accepts("decode_preemption_args",
                     [&] { args = wire::decode_preemption_args(body, names); })) {
    return 0;
  }
  for (const auto& [node, victims] : args.victims) {
    for (const std::string& uid : victims.pod_uids) {
      if (uid.empty()) fuzz::finding("decode_preemption_args", "accepted a victim without a UID");
    }
  }
  // The reply names the same nodes and victims (what preempt answers when it keeps them all).
  const kube::Json reply =
      kube::Json::parse(wire::encode_preemption_result(args.victims), nullptr, false);
  if (reply.is_discarded() || !reply["NodeNameToMetaVictims"].is_object()) {
    fuzz::finding("encode_preemption_result", "reply is not a JSON object");
  }
  const kube::Json& map = reply["NodeNameToMetaVictims"];
  if (map.size() != args.victims.size())
    fuzz::finding("encode_preemption_result", "node count changed");
  for (const auto& [node, victims] : args.victims) {
    if (!map.contains(node) || map[node]["Pods"].size() != victims.pod_uids.size()) {
      fuzz::finding("encode_preemption_result", "victims do not round-trip");
    }
  }
  return 0;
}
