// bind request bodies (ExtenderBindingArgs).

#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "gpushare/wire/wire_types.h"

using namespace gpushare;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  fuzz::accepts("decode_binding_args", [&] {
    const wire::BindingArgs args = wire::decode_binding_args(body);
    // What bind needs to find the pod; the decoder promises them.
    if (args.pod_name.empty() || args.node.empty())
      fuzz::finding("decode_binding_args", "accepted an empty pod or node name");
  });
  return 0;
}
