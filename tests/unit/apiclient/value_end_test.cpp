// ValueEnd has a 64-byte block path (SSE2) next to its byte loop: both must find the same ends,
// wherever chunks are cut and wherever quotes, escapes and brackets fall relative to a block.

#include "gpushare/apiclient/value_end.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace gpushare::apiclient {
namespace {

// Where each value that starts at '{' or '[' (or '"' when `strings`) ends, one past its last
// byte, following the rules byte by byte over the whole text.
std::vector<std::size_t> reference_ends(std::string_view text, bool strings) {
  std::vector<std::size_t> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char first = text[i];
    if (first != '{' && first != '[' && !(strings && first == '"')) {
      ++i;
      continue;
    }
    std::size_t depth = 0;
    bool in_string = false;
    bool escaped = false;
    bool ended = false;
    for (; i < text.size() && !ended; ++i) {
      const char c = text[i];
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
          ended = depth == 0;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && depth > 0) {
        ended = --depth == 0;
      }
    }
    if (ended) out.push_back(i);
  }
  return out;
}

// The same through ValueEnd, fed `chunk` bytes at a time as the list decoder and the watch
// framer feed it.
std::vector<std::size_t> scanned_ends(std::string_view text, std::size_t chunk, bool strings) {
  std::vector<std::size_t> out;
  ValueEnd value_end;
  bool inside = false;
  for (std::size_t base = 0; base < text.size(); base += chunk) {
    const std::string_view bytes = text.substr(base, chunk);
    std::size_t i = 0;
    while (i < bytes.size()) {
      if (inside) {
        if (!value_end.scan(bytes, i)) break;
        inside = false;
        out.push_back(base + i);
        continue;
      }
      const char c = bytes[i];
      if (c == '{' || c == '[' || (strings && c == '"')) {
        value_end.reset();
        inside = true;
        continue;
      }
      ++i;
    }
  }
  return out;
}

void expect_same_ends(const std::string& text) {
  for (const std::size_t chunk :
       {std::size_t{1}, std::size_t{7}, std::size_t{63}, std::size_t{64}, std::size_t{65},
        std::size_t{130}, std::size_t{4096}, text.size() + 1}) {
    for (const bool strings : {false, true}) {
      ASSERT_EQ(scanned_ends(text, chunk, strings), reference_ends(text, strings))
          << "chunk " << chunk << (strings ? ", strings too" : "") << ", text: " << text;
    }
  }
}

// Random texts: long string runs (where the block path pays), brackets, and backslashes either
// often or rarely, so that both paths and the switches between them are exercised.
std::string random_text(std::mt19937& random, int backslash_per_mille) {
  std::string text;
  const std::size_t length = random() % 600;
  while (text.size() < length) {
    const auto pick = random() % 1000;
    if (pick < static_cast<unsigned>(backslash_per_mille)) {
      text += '\\';
    } else if (pick < 100) {
      text += "{}[]\""[random() % 5];
    } else if (pick < 130) {
      text += std::string(random() % 80, 'x');
    } else {
      text += ",: a1"[random() % 5];
    }
  }
  return text;
}

TEST(ValueEnd, BlockPathFindsTheSameEndsAsTheByteLoop) {
  std::mt19937 random(20261124);
  for (int round = 0; round < 3000; ++round) {
    expect_same_ends(random_text(random, round % 2 == 0 ? 2 : 60));
    if (HasFatalFailure()) return;
  }
}

TEST(ValueEnd, QuotesEscapesAndBracketsAtBlockEdges) {
  for (std::size_t pad = 55; pad < 75; ++pad) {
    const std::string filler(pad, 'y');
    // A string that ends, or an escape that falls, at the edge of a 64-byte block.
    expect_same_ends("{\"" + filler + "\":\"a\\\"}\"}{\"b\":[1]}");
    expect_same_ends("[\"" + filler + "\\\\\",{\"c\":\"]\"}]");
    expect_same_ends("{\"k\":\"" + filler + "\"}" + "{\"" + filler + "\":{}}");
    // A closing bracket as the block's last byte, and text inside a string that looks like one.
    expect_same_ends("{" + filler + "}" + "{\"" + filler + "}\"}");
    // Stray closers never take the depth below zero.
    expect_same_ends("]}" + filler + "{]]" + filler + "}");
  }
}

TEST(ValueEnd, AnItemOfARealisticListEndsWhereItShould) {
  std::string item =
      R"({"metadata":{"name":"trainer-000001","annotations":{"sidecar.istio.io/status":)"
      R"("{\"initContainers\":[\"istio-proxy\"]}"}},"spec":{"containers":[{"name":"main",)"
      R"("command":["python","-m","train"],"env":[)";
  for (int i = 0; i < 20; ++i)
    item += R"({"name":"SETTING_)" + std::to_string(i) + R"(","value":"v"},)";
  item += R"({"name":"LAST","value":"]}\\"}]}]}})";
  const std::string list = item + "," + item + "," + item;
  const auto ends = scanned_ends(list, 1000, false);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[0], item.size());
  EXPECT_EQ(ends[2], list.size());
  expect_same_ends(list);
}

}  // namespace
}  // namespace gpushare::apiclient
