// filter/prioritize request bodies (ExtenderArgs): the one decoder the service uses, against the
// reference that decodes an nlohmann tree as the extender did before simdjson
// (tests/support/reference_extender_args.h); they must agree on every input.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "gpushare/wire/wire_decode.h"
#include "gpushare/wire/wire_encode.h"
#include "reference_extender_args.h"

using namespace gpushare;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const kube::ResourceNames names;
  reference::ReferenceArgs dom;
  wire::ExtenderArgs text;
  const bool dom_ok = fuzz::accepts("reference::decode_extender_args",
                                    [&] { dom = reference::decode_extender_args(body, names); });
  const bool text_ok = fuzz::accepts("decode_extender_args_body",
                                     [&] { text = wire::decode_extender_args_body(body, names); });
  if (dom_ok != text_ok) {
    fuzz::finding("decoders disagree", dom_ok ? "only the DOM decoder accepted the body"
                                              : "only the text decoder accepted the body");
  }
  if (!dom_ok) return 0;
  if (dom.offered_names() != text.offered_names())
    fuzz::finding("decoders disagree", "offered node names differ");
  if (dom.pod.uid != text.pod.uid || dom.pod.name != text.pod.name ||
      dom.pod.namespace_name != text.pod.namespace_name || dom.pod.request != text.pod.request ||
      dom.pod.node_name != text.pod.node_name || dom.pod.cpu_milli != text.pod.cpu_milli ||
      dom.pod.memory != text.pod.memory) {
    fuzz::finding("decoders disagree", "pod fields differ");
  }
  if (dom.nodes.has_value() != text.has_node_objects())
    fuzz::finding("decoders disagree", "node objects vs names");

  // The replies are written without a DOM but must be what nlohmann would write, and a filter
  // reply echoes the text decoder's node spans verbatim: they must be the very objects the DOM
  // decoder saw, or kube-scheduler would receive broken JSON.
  wire::FilterResult passed;
  passed.node_names = text.offered_names();
  if (text.node_texts) {
    passed.node_texts.emplace();
    for (const wire::NodeText& node : *text.node_texts) passed.node_texts->push_back(node.json);
    passed.node_source = text.node_source;
  }
  const kube::Json reply = kube::Json::parse(wire::encode_filter_result(passed), nullptr, false);
  if (reply.is_discarded()) fuzz::finding("encode_filter_result", "reply is not valid JSON");
  if (reply["NodeNames"].get<std::vector<std::string>>() != passed.node_names.strings()) {
    fuzz::finding("encode_filter_result", "NodeNames do not round-trip");
  }
  if (dom.nodes &&
      (!reply["Nodes"].is_object() || reply["Nodes"]["items"] != kube::Json(*dom.nodes))) {
    fuzz::finding("encode_filter_result", "echoed node objects differ from the DOM decoder's");
  }
  wire::HostPriorityList priorities;
  kube::Json expected = kube::Json::array();
  std::int64_t score = 0;
  for (const std::string_view name : passed.node_names) {
    priorities.push_back(name, score);
    expected.push_back({{"Host", name}, {"Score", score}});
    score = score * 7 - 3;
  }
  if (wire::encode_priorities(priorities) !=
      expected.dump(-1, ' ', false, kube::Json::error_handler_t::replace)) {
    fuzz::finding("encode_priorities", "differs from nlohmann's dump");
  }
  return 0;
}
