#include "gpushare/core/node_state_key.h"

#include <cstring>
#include <string>

namespace gpushare::core {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t value) {
  h ^= value + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xbf58476d1ce4e5b9ULL;
}

// Length and the last eight bytes: GPU model names differ at their end ("...-40GB",
// "...-80GB"); same_state compares them in full.
std::uint64_t text_bits(const std::string& text) {
  std::uint64_t tail = 0;
  if (text.size() >= 8) std::memcpy(&tail, text.data() + text.size() - 8, 8);
  return tail ^ text.size();
}

}  // namespace

bool same_state(const NodeState& a, const NodeState& b) {
  const NodeSpec& x = a.spec();
  const NodeSpec& y = b.spec();
  if (x.gpu_count != y.gpu_count || x.memory_per_gpu != y.memory_per_gpu ||
      x.cpu_milli != y.cpu_milli || x.memory != y.memory || x.unschedulable != y.unschedulable ||
      a.unindexed_used() != b.unindexed_used() || a.cpu_used() != b.cpu_used() ||
      a.memory_used() != b.memory_used() || a.gpus().size() != b.gpus().size() ||
      x.gpu_model != y.gpu_model || x.misconfiguration != y.misconfiguration) {
    return false;
  }
  for (std::size_t i = 0; i < a.gpus().size(); ++i) {
    const GpuState& g = a.gpus()[i];
    const GpuState& h = b.gpus()[i];
    if (g.capacity != h.capacity || g.used != h.used || g.healthy != h.healthy) return false;
  }
  return true;
}

std::uint64_t state_hash(const NodeState& node) {
  const NodeSpec& spec = node.spec();
  std::uint64_t h = mix(static_cast<std::uint64_t>(spec.gpu_count),
                        static_cast<std::uint64_t>(spec.memory_per_gpu));
  h = mix(h, static_cast<std::uint64_t>(spec.cpu_milli) ^
                 (static_cast<std::uint64_t>(spec.memory) << 1) ^ (spec.unschedulable ? 1U : 0U));
  h = mix(h, static_cast<std::uint64_t>(node.unindexed_used()));
  h = mix(h, static_cast<std::uint64_t>(node.cpu_used()) ^
                 (static_cast<std::uint64_t>(node.memory_used()) << 3));
  h = mix(h, text_bits(spec.gpu_model) ^ spec.misconfiguration.size());
  for (const GpuState& gpu : node.gpus()) {
    h = mix(h, static_cast<std::uint64_t>(gpu.used) ^
                   (static_cast<std::uint64_t>(gpu.capacity) << 20) ^
                   (gpu.healthy ? 0U : 0x8000000000000000ULL));
  }
  return h ^ (h >> 29);
}

}  // namespace gpushare::core
