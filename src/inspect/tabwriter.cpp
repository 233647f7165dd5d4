#include "gpushare/inspect/tabwriter.h"

#include <algorithm>
#include <vector>

namespace gpushare::inspect {
namespace {

std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// A transcription of Go's Writer.format and Writer.writeLines (minwidth 0, padchar ' ', no
// flags). A line holds its tab-terminated cells and then the text after its last tab; the text
// after the final newline has no cells, as in Go's buffer. (Text that does not end with a
// newline is laid out as if it did; the plugin's always does.)
class Formatter {
 public:
  Formatter(std::string_view text, std::size_t padding) : padding_(padding) {
    std::size_t start = 0;
    while (true) {
      const std::size_t end = text.find('\n', start);
      const std::string_view line =
          text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
      std::vector<std::string_view> cells;
      if (end != std::string_view::npos || !line.empty()) {
        std::size_t cell_start = 0;
        while (true) {
          const std::size_t tab = line.find('\t', cell_start);
          cells.push_back(line.substr(cell_start, tab == std::string_view::npos
                                                      ? line.size() - cell_start
                                                      : tab - cell_start));
          if (tab == std::string_view::npos) break;
          cell_start = tab + 1;
        }
      }
      lines_.push_back(std::move(cells));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
  }

  std::string run() {
    format(0, lines_.size());
    return std::move(out_);
  }

 private:
  // Does `line` have a tab-terminated cell in `column`?
  bool has_column(std::size_t line, std::size_t column) const {
    return column + 1 < lines_[line].size();
  }

  void format(std::size_t line0, std::size_t line1) {
    const std::size_t column = widths_.size();
    for (std::size_t at = line0; at < line1; ++at) {
      if (!has_column(at, column)) continue;
      write_lines(line0, at);
      line0 = at;
      std::size_t width = 0;
      for (; at < line1 && has_column(at, column); ++at) {
        width = std::max(width, code_points(lines_[at][column]) + padding_);
      }
      widths_.push_back(width);
      format(line0, at);
      widths_.pop_back();
      line0 = at;
    }
    write_lines(line0, line1);
  }

  void write_lines(std::size_t line0, std::size_t line1) {
    for (std::size_t i = line0; i < line1; ++i) {
      const auto& cells = lines_[i];
      for (std::size_t j = 0; j < cells.size(); ++j) {
        out_ += cells[j];
        if (j < widths_.size()) out_.append(widths_[j] - code_points(cells[j]), ' ');
      }
      if (i + 1 < lines_.size()) out_ += '\n';
    }
  }

  std::size_t padding_;
  std::vector<std::vector<std::string_view>> lines_;
  std::vector<std::size_t> widths_;
  std::string out_;
};

}  // namespace

std::string go_tabwriter(std::string_view text, std::size_t padding) {
  return Formatter(text, padding).run();
}

}  // namespace gpushare::inspect
