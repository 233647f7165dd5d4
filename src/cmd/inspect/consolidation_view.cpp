// `kubectl inspect gpushare --consolidation`: the extender's consolidation report as text.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "cmd/inspect/sources.h"

namespace gpushare::cmd::inspect {
namespace {

std::string place(const kube::Json& where) {
  if (!where.is_object()) return "?";
  return fmt::format("{}/GPU{}", where.value("node", "?"), where.value("gpu", -1));
}

std::string text(const kube::Json& report, const char* key) {
  const auto it = report.find(key);
  return it != report.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string render_consolidation(const kube::Json& report) {
  std::string out = fmt::format("Consolidation: {} mode", text(report, "mode"));
  if (report.value("mode", "") == "evict")
    out += report.value("acting", false) ? " (this replica acts)" : " (this replica does not act)";
  out += fmt::format(", {} of {} moves used this hour\n", report.value("movedInLastHour", 0),
                     report.value("maxMovesPerHour", 0));
  if (const std::string error = text(report, "error"); !error.empty())
    out += fmt::format("Error: {}\n", error);
  const kube::Json plan = report.value("plan", kube::Json());
  if (plan.is_object()) {
    out += fmt::format("Plan: move {} pod(s) to free {} GPU(s)\n", plan.value("podsMoved", 0),
                       plan.value("gpusFreed", 0));
    std::vector<std::array<std::string, 4>> rows = {{"POD", "FROM", "TO", "MEMORY"}};
    for (const kube::Json& move : plan.value("moves", kube::Json::array())) {
      rows.push_back({move.value("pod", "?"), place(move.value("from", kube::Json())),
                      place(move.value("to", kube::Json())),
                      std::to_string(move.value("memory", 0))});
    }
    std::array<std::size_t, 4> width{};
    for (const auto& row : rows) {
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    for (const auto& row : rows) {
      out += fmt::format("  {:<{}}  {:<{}}  {:<{}}  {}\n", row[0], width[0], row[1], width[1],
                         row[2], width[2], row[3]);
    }
  } else if (text(report, "error").empty()) {
    out += "Plan: none (no GPU can be freed by moving the pods that may move)\n";
  }
  const kube::Json moving = report.value("inFlight", kube::Json());
  if (moving.is_object()) {
    out += fmt::format("In flight: {} from {} to {} ({}, {} refusal(s))\n",
                       moving.value("pod", "?"), place(moving.value("from", kube::Json())),
                       place(moving.value("to", kube::Json())), moving.value("phase", "?"),
                       moving.value("refusals", 0));
  }
  if (const std::string waiting = text(report, "waiting"); !waiting.empty())
    out += fmt::format("Waiting: {}\n", waiting);
  const kube::Json stop = report.value("lastStop", kube::Json());
  if (stop.is_object())
    out += fmt::format("Last stop: {} ({})\n", stop.value("reason", "?"), stop.value("at", "?"));
  const kube::Json skipped = report.value("skipped", kube::Json());
  if (skipped.is_object() && !skipped.empty()) {
    std::string reasons;
    for (const auto& [reason, count] : skipped.items()) {
      reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", count.dump(), reason);
    }
    out += fmt::format("Not movable: {}\n", reasons);
  }
  return out;
}

}  // namespace gpushare::cmd::inspect
