#include "gpushare/core/state_memo.h"

#include <algorithm>
#include <bit>

#include "gpushare/core/node_state_key.h"

namespace gpushare::core {

void StateMemo::begin(std::size_t nodes) {
  const std::size_t wanted = std::bit_ceil(std::max<std::size_t>(16, 2 * nodes));
  if (slots_.size() < wanted) {
    slots_.assign(wanted, Slot{});
    epoch_ = 0;
  }
  if (++epoch_ == 0) {  // wrapped: no slot may look current
    slots_.assign(slots_.size(), Slot{});
    epoch_ = 1;
  }
  used_ = 0;
}

std::optional<StateMemo::Remembered> StateMemo::find(const NodeState& node,
                                                     std::uint64_t hash) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.epoch != epoch_) return std::nullopt;
    if (slot.hash == hash && same_state(*slot.node, node)) {
      return Remembered{slot.feasible ? std::optional<double>(slot.score) : std::nullopt,
                        slot.bounded};
    }
  }
}

void StateMemo::remember(const NodeState& node, std::uint64_t hash, std::optional<double> score,
                         bool bounded) {
  // At most half full, so probes stay short and always end at a free slot.
  if (2 * (used_ + 1) > slots_.size()) return;
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  while (slots_[i].epoch == epoch_) {
    Slot& slot = slots_[i];
    if (slot.hash == hash && same_state(*slot.node, node)) {
      if (slot.bounded && !bounded) {
        slot.score = score.value_or(0.0);
        slot.feasible = score.has_value();
        slot.bounded = false;
      }
      return;
    }
    i = (i + 1) & mask;
  }
  slots_[i] = {hash, &node, score.value_or(0.0), epoch_, score.has_value(), bounded};
  ++used_;
}

}  // namespace gpushare::core
