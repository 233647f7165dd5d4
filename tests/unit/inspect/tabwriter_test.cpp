// The plugin's tab writer lays text out as Go's text/tabwriter does with the original plugin's
// settings (minwidth 0, tabwidth 0, padding 2, ' ', no flags).

#include "gpushare/inspect/tabwriter.h"

#include <gtest/gtest.h>

#include "gpushare/inspect/render.h"
#include "gpushare/inspect/view.h"

namespace gpushare::inspect {
namespace {

TEST(GoTabwriter, LaysOutBlocksAsGoDoes) {
  // Column widths hold within a block of consecutive lines that have the column; a line without
  // tabs ends every block; the cell after the last tab is not padded, a tab-terminated one is.
  EXPECT_EQ(go_tabwriter("a\tbbb\tc\naaaa\tb\n--\nx\ty\t\n"),
            "a     bbb  c\n"
            "aaaa  b\n"
            "--\n"
            "x  y  \n");
  // Column 1 spans only the lines that have it: line 3 has column 0 alone.
  EXPECT_EQ(go_tabwriter("a\tb\tc\nlonger\tbb\t\nz\t\n"),
            "a       b   c\nlonger  bb  \nz       \n");
  // Empty cells are padded; widths count code points.
  EXPECT_EQ(go_tabwriter("\t\u00e9\u00e9\tx\nabc\t\ty\n"), "     \u00e9\u00e9  x\nabc      y\n");
  EXPECT_EQ(go_tabwriter(""), "");
}

TEST(GoTabwriter, PaddingIsTheGapAfterTheWidestCell) {
  EXPECT_EQ(go_tabwriter("a\tb\nccc\td\n", 1), "a   b\nccc d\n");
  EXPECT_EQ(go_tabwriter("a\tb\nccc\td\n", 4), "a      b\nccc    d\n");
}

ClusterView one_gpu_of(core::Units total) {
  ClusterView view;
  view.nodes.emplace_back();
  view.nodes.back().gpus.emplace_back();
  view.nodes.back().gpus.back().total = total;
  return view;
}

TEST(GuessUnit, MoreThanAHundredUnitsPerGpuAreMebibytes) {
  EXPECT_EQ(guess_unit(one_gpu_of(80)), "GiB");
  EXPECT_EQ(guess_unit(one_gpu_of(100)), "GiB");
  EXPECT_EQ(guess_unit(one_gpu_of(101)), "MiB");
  EXPECT_EQ(guess_unit(one_gpu_of(81920)), "MiB");
}

TEST(GuessUnit, AClusterWithoutGpusIsInGibibytes) {
  EXPECT_EQ(guess_unit(ClusterView{}), "GiB");
  EXPECT_EQ(guess_unit(one_gpu_of(0)), "GiB");
}

}  // namespace
}  // namespace gpushare::inspect
