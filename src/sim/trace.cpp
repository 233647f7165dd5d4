#include "gpushare/sim/trace.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

namespace gpushare::sim {
namespace {

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(separator, start);
    fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return fields;
}

// Rows of a CSV file without quoting (the trace has none), header first; blank lines skipped.
class CsvTable {
 public:
  explicit CsvTable(std::string_view text) {
    std::size_t line_number = 0;
    while (!text.empty()) {
      const std::size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
      ++line_number;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      if (header_.empty()) {
        header_ = split(line, ',');
      } else {
        rows_.push_back({line_number, split(line, ',')});
      }
    }
    if (header_.empty()) throw TraceError("CSV has no header line");
  }

  std::optional<std::size_t> column(std::string_view name) const {
    for (std::size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == name) return i;
    }
    return std::nullopt;
  }
  std::size_t required(std::string_view name) const {
    auto index = column(name);
    if (!index) throw TraceError(fmt::format("CSV header lacks column '{}'", name));
    return *index;
  }

  struct Row {
    std::size_t line;
    std::vector<std::string_view> fields;
  };
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::vector<std::string_view> header_;
  std::vector<Row> rows_;
};

std::string_view field(const CsvTable::Row& row, std::size_t column) {
  if (column >= row.fields.size()) {
    throw TraceError(fmt::format("line {}: expected at least {} fields, got {}", row.line,
                                 column + 1, row.fields.size()));
  }
  return row.fields[column];
}

std::int64_t integer(const CsvTable::Row& row, std::size_t column, std::string_view what) {
  const std::string_view text = field(row, column);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 0) {
    throw TraceError(
        fmt::format("line {}: {} '{}' is not a non-negative integer", row.line, what, text));
  }
  return value;
}

// A finite, non-negative decimal up to `max`; nullopt for an empty field.
std::optional<double> decimal(const CsvTable::Row& row, std::size_t column, std::string_view what,
                              double max) {
  const std::string_view text = field(row, column);
  if (text.empty()) return std::nullopt;
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0) {
    throw TraceError(
        fmt::format("line {}: {} '{}' is not a non-negative number", row.line, what, text));
  }
  if (value > max) {
    throw TraceError(fmt::format("line {}: {} {} exceeds {}", row.line, what, text, max));
  }
  return value;
}

// Bounds on the PAI columns: far above any real task, low enough that every conversion stays
// exact in 64-bit integers.
constexpr double kMaxPlanCpu = 1e6;  // 10,000 cores
constexpr double kMaxPlanMem = 1e6;  // GiB
constexpr double kMaxPlanGpu = 1e5;  // 1,000 GPUs
constexpr double kMaxSeconds = 1e12;

}  // namespace

bool is_pai_tasks_csv(std::string_view text) {
  const std::string_view header = text.substr(0, text.find('\n'));
  for (auto name : split(header, ',')) {
    if (!name.empty() && name.back() == '\r') name.remove_suffix(1);
    if (name == "plan_gpu") return true;
  }
  return false;
}

PaiTasks parse_pai_tasks_csv(std::string_view text) {
  const CsvTable table(text);
  const std::size_t name = table.required("job_name");
  const std::size_t start = table.required("start_time");
  const std::size_t end = table.required("end_time");
  const std::size_t cpu = table.required("plan_cpu");
  const std::size_t memory = table.required("plan_mem");
  const std::size_t gpu = table.required("plan_gpu");
  PaiTasks out;
  out.pods.reserve(table.rows().size());
  for (const auto& row : table.rows()) {
    TracePod pod;
    pod.name = std::string(field(row, name));
    if (pod.name.empty()) throw TraceError(fmt::format("line {}: empty job_name", row.line));
    const auto cpu_percent = decimal(row, cpu, "plan_cpu", kMaxPlanCpu);
    const auto memory_gib = decimal(row, memory, "plan_mem", kMaxPlanMem);
    const auto gpu_percent = decimal(row, gpu, "plan_gpu", kMaxPlanGpu);
    const auto from = decimal(row, start, "start_time", kMaxSeconds);
    const auto to = decimal(row, end, "end_time", kMaxSeconds);
    pod.demand.cpu_milli = std::llround(cpu_percent.value_or(0) * 10);
    pod.demand.memory = std::llround(memory_gib.value_or(0) * 1024);
    const double percent = gpu_percent.value_or(0);
    pod.demand.gpu_count = 0;
    pod.demand.per_gpu = 0;
    if (percent > 0 && percent < 100) {
      pod.demand.gpu_count = 1;
      pod.demand.per_gpu = std::max<core::Units>(1, std::llround(percent * 10));
    } else if (percent >= 100) {
      if (std::fmod(percent, 100) != 0) {
        throw TraceError(fmt::format(
            "line {}: plan_gpu {} is neither a share of one GPU (below 100) nor whole GPUs (a "
            "multiple of 100)",
            row.line, field(row, gpu)));
      }
      pod.demand.gpu_count = static_cast<int>(percent / 100);
      pod.demand.per_gpu = kUnitsPerGpu;
    }
    if (!from || !to) {
      ++out.dropped_missing_time;
      continue;
    }
    if (*to < *from) {
      ++out.dropped_end_before_start;
      continue;
    }
    pod.lifetime = *to - *from;
    out.pods.push_back(std::move(pod));
  }
  return out;
}

std::vector<core::NodeSpec> parse_nodes_csv(std::string_view text) {
  const CsvTable table(text);
  const std::size_t name = table.required("sn");
  const std::size_t cpu = table.required("cpu_milli");
  const std::size_t memory = table.required("memory_mib");
  const std::size_t gpus = table.required("gpu");
  const auto model = table.column("model");
  std::vector<core::NodeSpec> nodes;
  nodes.reserve(table.rows().size());
  for (const auto& row : table.rows()) {
    core::NodeSpec spec;
    spec.name = std::string(field(row, name));
    if (spec.name.empty()) throw TraceError(fmt::format("line {}: empty node name", row.line));
    spec.cpu_milli = integer(row, cpu, "cpu_milli");
    spec.memory = integer(row, memory, "memory_mib");
    spec.gpu_count = static_cast<int>(integer(row, gpus, "gpu"));
    spec.memory_per_gpu = spec.gpu_count > 0 ? kUnitsPerGpu : 0;
    if (model && *model < row.fields.size()) spec.gpu_model = std::string(row.fields[*model]);
    nodes.push_back(std::move(spec));
  }
  return nodes;
}

std::vector<TracePod> parse_pods_csv(std::string_view text) {
  const CsvTable table(text);
  const std::size_t name = table.required("name");
  const std::size_t cpu = table.required("cpu_milli");
  const std::size_t memory = table.required("memory_mib");
  const std::size_t num_gpu = table.required("num_gpu");
  const std::size_t gpu_milli = table.required("gpu_milli");
  const auto gpu_spec = table.column("gpu_spec");
  const auto created = table.column("creation_time");
  const auto deleted = table.column("deletion_time");
  std::vector<TracePod> pods;
  pods.reserve(table.rows().size());
  for (const auto& row : table.rows()) {
    TracePod pod;
    pod.name = std::string(field(row, name));
    pod.demand.cpu_milli = integer(row, cpu, "cpu_milli");
    pod.demand.memory = integer(row, memory, "memory_mib");
    const auto count = integer(row, num_gpu, "num_gpu");
    const auto milli = integer(row, gpu_milli, "gpu_milli");
    if (count > 0 && (milli == 0 || milli > kUnitsPerGpu)) {
      throw TraceError(fmt::format("line {}: gpu_milli {} outside 1..{} for a GPU pod", row.line,
                                   milli, kUnitsPerGpu));
    }
    pod.demand.gpu_count = static_cast<int>(count);
    pod.demand.per_gpu = count > 0 ? milli : 0;
    if (gpu_spec && *gpu_spec < row.fields.size() && !row.fields[*gpu_spec].empty()) {
      for (auto model : split(row.fields[*gpu_spec], '|')) {
        if (!model.empty()) pod.demand.allowed_models.emplace_back(model);
      }
    }
    if (created && deleted && *created < row.fields.size() && *deleted < row.fields.size()) {
      // Times that are missing, not whole seconds or out of order give no lifetime (only the
      // time mode reads it): the row is still a pod.
      const auto seconds = [](std::string_view text) -> std::optional<std::int64_t> {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error != std::errc{} || end != text.data() + text.size() || value < 0)
          return std::nullopt;
        return value;
      };
      const auto from = seconds(row.fields[*created]);
      const auto to = seconds(row.fields[*deleted]);
      if (from && to && *to >= *from) pod.lifetime = static_cast<double>(*to - *from);
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(fmt::format("cannot open {}", path.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw TraceError(fmt::format("cannot read {}", path.string()));
  return std::move(text).str();
}

}  // namespace gpushare::sim
