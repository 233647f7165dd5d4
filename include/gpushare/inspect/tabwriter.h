#pragma once
// Go's text/tabwriter as Aliyun's kubectl-inspect-gpushare configures it
// (tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)): the plugin's output goes through the same
// elastic-tabstop algorithm, so that tables written with the original's format strings come out
// byte for byte as the original prints them (trailing padding included).

#include <string>
#include <string_view>

namespace gpushare::inspect {

// Cells end at '\t'; a column's width is its widest cell in a block of consecutive lines that
// all have a tab-terminated cell in that column, plus `padding`. The last cell of a line (after
// its last tab) is never padded. Widths count UTF-8 code points, as Go counts runes.
std::string go_tabwriter(std::string_view text, std::size_t padding = 2);

}  // namespace gpushare::inspect
