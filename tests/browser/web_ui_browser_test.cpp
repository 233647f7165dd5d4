// The web view in a real browser: headless Chromium (through chromedriver) against
// gpushare-extender running standalone. Checks that the tiles and bars drawn match /inspect, that
// the page refreshes itself after a bind, writes a screenshot, and measures 1 000 nodes.
// Skips when chromium or chromedriver is missing (scripts/install-browser.sh installs them).

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "browser/webdriver.h"

namespace gpushare::browser {
namespace {

namespace fs = std::filesystem;

const fs::path kSampleCluster = fs::path(GPUSHARE_SOURCE_DIR) / "deploy/samples/cluster.yaml";

class WebUiBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = browser_missing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    work_ = fs::temp_directory_path() /
            ("gpushare-browser-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  void TearDown() override {
    if (!work_.empty() && !HasFailure()) fs::remove_all(work_);
    if (HasFailure()) std::cerr << "logs kept in " << work_ << "\n";
  }
  fs::path work_;
};

// What the page drew, read back from the DOM: tiles, GPU bars and pod segments with their
// on-screen widths, and the summary.
const char* kReadPage = R"js(
  var measure = arguments[0];
  function rect(e) { return measure ? e.getBoundingClientRect().width : 0; }
  var tiles = Array.prototype.map.call(document.querySelectorAll('#nodes .tile'), function (t) {
    return {
      node: t.dataset.node, free: Number(t.dataset.free), frag: Number(t.dataset.frag),
      cordoned: t.classList.contains('cordoned'),
      gpus: Array.prototype.map.call(t.querySelectorAll('.gpu'), function (g) {
        return {
          id: Number(g.dataset.gpu), total: Number(g.dataset.total), used: Number(g.dataset.used),
          unhealthy: g.classList.contains('unhealthy'), barWidth: rect(g.querySelector('.bar')),
          segs: Array.prototype.map.call(g.querySelectorAll('.seg'), function (s) {
            return {pod: s.dataset.pod || '', amount: Number(s.dataset.amount),
                    assumed: s.dataset.assumed === 'true', state: s.dataset.state || '', width: rect(s),
                    title: s.title, other: s.classList.contains('other'),
                    dra: s.classList.contains('dra'), claim: s.dataset.claim || '',
                    claimPod: s.dataset.claimPod || '',
                    filled: getComputedStyle(s).backgroundImage === 'none'};
          }),
          draDevice: g.dataset.draDevice || '', gpuTitle: g.title,
          free: g.querySelector('.gpu-free').textContent
        };
      }),
      stats: t.querySelector('.tile-stats').textContent,
      fragTitle: (t.querySelector('.tile-stats abbr') || {}).title || '',
      unindexed: Array.prototype.map.call(t.querySelectorAll('.unindexed'), function (u) { return u.dataset.pod; }),
      draClaims: Array.prototype.map.call(t.querySelectorAll('.dra-claim'), function (c) { return c.textContent; })
    };
  });
  function text(sel) { var e = document.querySelector(sel); return e ? e.textContent : null; }
  return {
    tiles: tiles,
    renders: Number(document.body.dataset.renders || 0),
    allocated: text('#sum-allocated .value'),
    pods: text('#sum-pods .value'),
    allocatedSub: text('#sum-allocated .sub'),
    draClaims: text('#sum-dra .value'),
    draHeld: text('#sum-dra .sub'),
    assumed: text('#sum-pods .sub'),
    fragmented: text('#sum-fragmented .value'),
    free: text('#sum-free .value'),
    namespaces: Array.prototype.map.call(document.querySelectorAll('#namespaces .ns'), function (n) {
      return {name: n.dataset.namespace, color: getComputedStyle(n.querySelector('.swatch')).backgroundColor};
    }),
    warnings: Array.prototype.map.call(document.querySelectorAll('#warnings .warning'), function (w) {
      return w.textContent;
    }),
    rejections: Array.prototype.map.call(document.querySelectorAll('#rejections tr.rejection'), function (r) {
      return Array.prototype.map.call(r.cells, function (c) { return c.textContent; });
    }),
    sameDocument: window.__gpushareSameDocument === true
  };
)js";

std::string number_text(const Json& n) {
  const double v = n.get<double>();
  if (v == std::floor(v)) return std::to_string(static_cast<long long>(v));
  return n.dump();
}

// An amount as the page writes it: with its unit (GiB for the sample's 16-unit GPUs), joined by
// a no-break space.
std::string amount_text(const Json& n) {
  return number_text(n) + "\u00a0GiB";
}

// How the page draws a pod: assumed (bound by the extender, not yet seen bound), pending (bound,
// not running yet) or running.
std::string state_of(const Json& pod) {
  if (pod["assumed"].get<bool>()) return "assumed";
  if (pod.value("phase", "") == "Pending") return "pending";
  return "running";
}

const std::map<std::string, std::string> kStateText = {
    {"assumed", "assumed"}, {"pending", "not running yet"}, {"running", "running"}};

// Every number on a tile's stats line carries the unit, and each is labelled.
void expect_labelled_amounts(const std::string& stats) {
  EXPECT_NE(stats.find("used "), std::string::npos) << stats;
  EXPECT_NE(stats.find("free "), std::string::npos) << stats;
  EXPECT_NE(stats.find("frag "), std::string::npos) << stats;
  std::size_t numbers = 0;
  for (std::size_t i = 0; i < stats.size();) {
    if (!std::isdigit(static_cast<unsigned char>(stats[i]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < stats.size() &&
           (std::isdigit(static_cast<unsigned char>(stats[end])) || stats[end] == '.'))
      ++end;
    EXPECT_EQ(stats.substr(end, 5), "\u00a0GiB") << "number without its unit in: " << stats;
    ++numbers;
    i = end;
  }
  EXPECT_EQ(numbers, 4u) << stats;  // used, total, free, frag
}

// Every node of /inspect (the page shows CPU-only nodes with ?cpu=1) has a tile; every GPU a bar
// with its total, used and health; every pod on it a segment with its amount, state and a hover
// text naming it, as wide (on screen, when measured) as its share of the GPU.
void expect_page_matches(const Json& page, const Json& inspect, bool measured) {
  std::map<std::string, Json> tiles;
  for (const Json& tile : page["tiles"]) tiles[tile["node"]] = tile;
  ASSERT_EQ(tiles.size(), inspect["nodes"].size()) << "one tile per node";
  for (const Json& node : inspect["nodes"]) {
    const std::string name = node["name"];
    SCOPED_TRACE("node " + name);
    ASSERT_TRUE(tiles.count(name));
    const Json& tile = tiles[name];
    EXPECT_EQ(tile["cordoned"], node["unschedulable"]);
    if (!node["devs"].empty()) {
      expect_labelled_amounts(tile["stats"]);
      EXPECT_NE(tile["fragTitle"].get<std::string>().find("fragmented GPU memory"),
                std::string::npos)
          << tile;
    }
    EXPECT_DOUBLE_EQ(tile["free"].get<double>(),
                     node["totalGPU"].get<double>() - node["usedGPU"].get<double>());
    if (node.contains("fragmentedGPU")) {
      EXPECT_NEAR(tile["frag"].get<double>(), node["fragmentedGPU"].get<double>(), 1e-9);
    }
    ASSERT_EQ(tile["gpus"].size(), node["devs"].size()) << "one bar per GPU";
    for (std::size_t i = 0; i < node["devs"].size(); ++i) {
      const Json& dev = node["devs"][i];
      const Json& bar = tile["gpus"][i];
      SCOPED_TRACE("gpu " + dev["id"].dump());
      EXPECT_EQ(bar["id"], dev["id"]);
      EXPECT_EQ(bar["total"], dev["totalGPU"]);
      EXPECT_EQ(bar["used"], dev["usedGPU"]);
      EXPECT_EQ(bar["unhealthy"].get<bool>(), !dev["healthy"].get<bool>());
      std::multiset<std::tuple<std::string, double, bool, std::string>> expected;
      double pods_used = 0;
      for (const Json& pod : dev["pods"]) {
        expected.emplace(pod["namespace"].get<std::string>() + "/" + pod["name"].get<std::string>(),
                         pod["usedGPU"].get<double>(), pod["assumed"].get<bool>(), state_of(pod));
        pods_used += pod["usedGPU"].get<double>();
      }
      // DRA claims: a segment each, beside the pods, labelled with the claim and its pod.
      std::multiset<std::tuple<std::string, std::string, double>> expected_claims;
      for (const Json& claim : dev.value("draClaims", Json::array())) {
        expected_claims.emplace(claim["claim"], claim["pod"], claim["usedGPU"].get<double>());
        pods_used += claim["usedGPU"].get<double>();
      }
      EXPECT_EQ(bar["draDevice"], dev.value("draDevice", ""));
      if (dev.contains("draDevice")) {
        EXPECT_NE(bar["gpuTitle"].get<std::string>().find("DRA device " +
                                                          dev["draDevice"].get<std::string>()),
                  std::string::npos)
            << bar["gpuTitle"];
      }
      std::multiset<std::tuple<std::string, std::string, double>> drawn_claims;
      EXPECT_EQ(bar["free"],
                amount_text(Json(dev["totalGPU"].get<double>() - dev["usedGPU"].get<double>())) +
                    " free");
      std::multiset<std::tuple<std::string, double, bool, std::string>> drawn;
      double drawn_width = 0;
      for (const Json& seg : bar["segs"]) {
        drawn_width += seg["width"].get<double>();
        if (seg["other"].get<bool>()) {
          EXPECT_DOUBLE_EQ(seg["amount"].get<double>(), dev["usedGPU"].get<double>() - pods_used);
        } else if (seg["dra"].get<bool>()) {
          drawn_claims.emplace(seg["claim"], seg["claimPod"], seg["amount"].get<double>());
          const std::string pod = seg["claimPod"];
          const std::string title = seg["title"];
          EXPECT_EQ(
              title.rfind("DRA claim " + seg["claim"].get<std::string>() + " (" +
                              (pod.empty() ? "no pod" : pod) + ")\n" + amount_text(seg["amount"]),
                          0),
              0u)
              << title;
          EXPECT_FALSE(seg["filled"].get<bool>())
              << "a claim is drawn apart from running pods: " << seg;
        } else {
          const std::string state = seg["state"];
          drawn.emplace(seg["pod"].get<std::string>(), seg["amount"].get<double>(),
                        seg["assumed"].get<bool>(), state);
          const std::string title = seg["title"];
          EXPECT_NE(title.find(seg["pod"].get<std::string>()), std::string::npos) << title;
          EXPECT_NE(title.find(amount_text(seg["amount"])), std::string::npos) << title;
          EXPECT_NE(title.find(kStateText.at(state)), std::string::npos) << title;
          // Running pods are filled with their colour; the others are patterned.
          EXPECT_EQ(seg["filled"].get<bool>(), state == "running") << seg;
        }
        if (measured) {
          const double share = seg["amount"].get<double>() / dev["totalGPU"].get<double>();
          EXPECT_NEAR(seg["width"].get<double>(), share * bar["barWidth"].get<double>(), 1.0)
              << "segment of " << seg["pod"] << " in a bar " << bar["barWidth"] << " px wide";
        }
      }
      EXPECT_EQ(drawn, expected);
      EXPECT_EQ(drawn_claims, expected_claims);
      if (measured) {
        EXPECT_GT(bar["barWidth"].get<double>(), 50.0);
        EXPECT_NEAR(drawn_width,
                    dev["usedGPU"].get<double>() / dev["totalGPU"].get<double>() *
                        bar["barWidth"].get<double>(),
                    1.5);
      }
    }
    std::multiset<std::string> unindexed;
    for (const Json& pod : node["unindexedPods"]) {
      unindexed.insert(pod["namespace"].get<std::string>() + "/" + pod["name"].get<std::string>());
    }
    std::multiset<std::string> drawn_unindexed(tile["unindexed"].begin(), tile["unindexed"].end());
    EXPECT_EQ(drawn_unindexed, unindexed);
  }
  EXPECT_EQ(page["allocated"],
            amount_text(inspect["usedGPU"]) + " of " + amount_text(inspect["totalGPU"]));
  EXPECT_EQ(page["free"], amount_text(Json(inspect["totalGPU"].get<double>() -
                                           inspect["usedGPU"].get<double>())));
  // The legend names every namespace that has a pod on a GPU, each with a colour.
  std::set<std::string> namespaces;
  for (const Json& node : inspect["nodes"]) {
    for (const Json& dev : node["devs"]) {
      for (const Json& pod : dev["pods"]) namespaces.insert(pod["namespace"].get<std::string>());
    }
    for (const Json& pod : node["unindexedPods"])
      namespaces.insert(pod["namespace"].get<std::string>());
    for (const Json& dev : node["devs"]) {
      for (const Json& claim : dev.value("draClaims", Json::array())) {
        const std::string key = claim["claim"];
        namespaces.insert(key.substr(0, key.find('/')));
      }
    }
  }
  std::set<std::string> legend;
  for (const Json& entry : page["namespaces"]) {
    legend.insert(entry["name"].get<std::string>());
    EXPECT_EQ(entry["color"].get<std::string>().rfind("rgb(", 0), 0u) << entry;
  }
  EXPECT_EQ(legend, namespaces);
  EXPECT_EQ(page["warnings"].size(), inspect.value("configWarnings", Json::array()).size());
  EXPECT_EQ(page["pods"], number_text(inspect["pods"]));
  EXPECT_EQ(page["assumed"], number_text(inspect["assumedPods"]) + " assumed, not yet bound");
}

Json read_page(Browser& browser, bool measure) {
  return browser.execute(kReadPage, Json::array({measure}));
}

void wait_for_first_render(Browser& browser) {
  browser.wait_for("return Number(document.body.dataset.renders || 0) >= 1;",
                   std::chrono::seconds(60));
}

// Types `text` into the filter box; the node of the one tile left, once one is left.
Json filter_to_one_tile(Browser& browser, const std::string& text) {
  browser.execute(R"js(
    var f = document.getElementById('filter');
    f.value = arguments[0];
    f.dispatchEvent(new Event('input'));)js",
                  Json::array({text}));
  return browser.wait_for(R"js(
    var t = document.querySelectorAll('#nodes .tile');
    return t.length === 1 ? t[0].dataset.node : null;)js");
}

Json demo_pod(const std::string& name, const std::string& uid, int request) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", uid}}},
          {"spec",
           {{"containers",
             Json::array({{{"name", "app"},
                           {"resources",
                            {{"limits", {{"aliyun.com/gpu-mem", std::to_string(request)}}}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST_F(WebUiBrowser, TilesAndBarsMatchInspectAndFilterAndSortWork) {
  Extender extender(kSampleCluster, work_);
  Browser browser(work_);
  // Through the prefix people know: redirected to /ui/, settings kept.
  browser.navigate(extender.url("/gpushare-scheduler/ui?cpu=1&refresh=0"));
  wait_for_first_render(browser);
  EXPECT_EQ(browser.execute("return window.location.pathname + window.location.search;"),
            "/ui/?cpu=1&refresh=0");
  const Json inspect = extender.inspect();
  // The sample has what the page must mark: an unhealthy GPU and pods on several GPUs.
  bool any_unhealthy = false;
  for (const Json& node : inspect["nodes"]) {
    for (const Json& dev : node["devs"]) any_unhealthy |= !dev["healthy"].get<bool>();
  }
  ASSERT_TRUE(any_unhealthy) << "deploy/samples/cluster.yaml should keep its unhealthy GPU";
  ASSERT_GE(inspect["pods"].get<int>(), 3);
  const Json page = read_page(browser, true);
  expect_page_matches(page, inspect, true);
  EXPECT_EQ(browser.execute("return document.querySelector('.gpu.unhealthy') !== null;"), true);

  // Filtering by a pod's name leaves the tile that holds it.
  EXPECT_EQ(filter_to_one_tile(browser, "inference-1"), "gpu-node-a");

  // Sorting by free memory orders the tiles as /inspect's numbers say.
  browser.execute(R"js(
    var f = document.getElementById('filter');
    f.value = '';
    f.dispatchEvent(new Event('input'));)js");
  browser.wait_for("return document.querySelectorAll('#nodes .tile').length === 4;");
  const Json order = browser.execute(R"js(
    var s = document.getElementById('sort');
    s.value = 'free-desc';
    s.dispatchEvent(new Event('change'));
    return Array.prototype.map.call(document.querySelectorAll('#nodes .tile'), function (t) { return t.dataset.node; });)js");
  std::vector<std::pair<double, std::string>> expected;
  for (const Json& node : inspect["nodes"]) {
    expected.emplace_back(-(node["totalGPU"].get<double>() - node["usedGPU"].get<double>()),
                          node["name"]);
  }
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> expected_order;
  for (const auto& entry : expected) expected_order.push_back(entry.second);
  EXPECT_EQ(order.get<std::vector<std::string>>(), expected_order);
}

TEST_F(WebUiBrowser, RefreshesAfterABindShowsRejectionsAndWritesAScreenshot) {
  Extender extender(kSampleCluster, work_);
  Browser browser(work_, 1400, 900);
  browser.navigate(extender.url("/ui/?refresh=1"));
  wait_for_first_render(browser);
  browser.execute("window.__gpushareSameDocument = true;");
  const Json before = read_page(browser, false);
  for (const Json& tile : before["tiles"]) {
    for (const Json& gpu : tile["gpus"]) {
      for (const Json& seg : gpu["segs"]) ASSERT_NE(seg["pod"], "default/demo-pending");
    }
  }

  // kube-scheduler's calls for the sample's pending pod: a filter that rejects the CPU-only node
  // and one that rejects every node for a pod too big for any GPU, then the bind.
  const Json nodes = Json::array({"gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-a"});
  auto [filter_status, filtered] = extender.post(
      "filter", {{"Pod", demo_pod("demo-pending", "3f1c2a9e-0000-4000-8000-000000000010", 6)},
                 {"NodeNames", nodes}});
  ASSERT_EQ(filter_status, 200) << filtered;
  auto [big_status, big] = extender.post(
      "filter", {{"Pod", demo_pod("too-big", "uid-too-big", 40)}, {"NodeNames", nodes}});
  ASSERT_EQ(big_status, 200) << big;
  auto [bind_status, bound] =
      extender.post("bind", {{"PodName", "demo-pending"},
                             {"PodNamespace", "default"},
                             {"PodUID", "3f1c2a9e-0000-4000-8000-000000000010"},
                             {"Node", "gpu-node-a"}});
  ASSERT_EQ(bind_status, 200) << bound;

  // The open page picks the bind up by itself (no reload: the marker survives).
  browser.wait_for(
      R"js(return document.querySelector('.seg[data-pod="default/demo-pending"]') !== null;)js",
      std::chrono::seconds(60));
  const Json inspect = extender.inspect();
  const Json after = read_page(browser, true);
  EXPECT_TRUE(after["sameDocument"].get<bool>()) << "the page was reloaded instead of refreshed";
  // Bound (in standalone mode, at once) but its phase is still Pending: drawn apart from the
  // running pods.
  EXPECT_EQ(
      browser.execute(
          R"js(return document.querySelector('.seg[data-pod="default/demo-pending"]').dataset.state;)js"),
      "pending");
  EXPECT_GT(after["renders"].get<int>(), before["renders"].get<int>());
  Json gpu_nodes = inspect;
  gpu_nodes["nodes"] = Json::array();
  for (const Json& node : inspect["nodes"]) {
    if (!node["devs"].empty()) gpu_nodes["nodes"].push_back(node);  // CPU-only hidden by default
  }
  expect_page_matches(after, gpu_nodes, true);

  // Recent rejections, newest first, as /inspect lists them.
  const Json& rejections = inspect["recentRejections"];
  ASSERT_GE(rejections.size(), 4u);
  ASSERT_EQ(after["rejections"].size(), std::min<std::size_t>(rejections.size(), 100));
  for (std::size_t i = 0; i < after["rejections"].size(); ++i) {
    const Json& row = after["rejections"][i];
    EXPECT_EQ(row[1], rejections[i]["pod"]);
    EXPECT_EQ(row[2], rejections[i]["node"]);
    EXPECT_EQ(row[3], rejections[i]["reason"]);
  }

  const std::string png = browser.screenshot_png();
  ASSERT_GT(png.size(), 24u);
  ASSERT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned>(static_cast<unsigned char>(png[at])) << 24) |
           (static_cast<unsigned>(static_cast<unsigned char>(png[at + 1])) << 16) |
           (static_cast<unsigned>(static_cast<unsigned char>(png[at + 2])) << 8) |
           static_cast<unsigned>(static_cast<unsigned char>(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 1400u) << "screenshot width";
  EXPECT_GE(be32(20), 700u) << "screenshot height";
  const fs::path out =
      env_or("GPUSHARE_UI_SCREENSHOT", (fs::path(GPUSHARE_BINARY_DIR) / "ui.png").string());
  std::ofstream(out, std::ios::binary) << png;
  std::cout << "screenshot: " << out << " (" << png.size() << " bytes)\n";
}

// Live mode on a DRA cluster: deploy/samples/dra-cluster.yaml in the fake API server (two nodes
// whose GPUs are published in ResourceSlices, claims holding 30 and 15 GiB) plus a device-plugin
// pod on its device-plugin node. Each claim is drawn on its GPU, apart from the pods, labelled
// "DRA claim ns/name (pod)", listed under the bars, counted in the summary and found by the
// filter.
TEST_F(WebUiBrowser, DraClaimsAreDrawnOnTheirGpusBesideDevicePluginPods) {
  const fs::path seed = work_ / "dra-cluster.yaml";
  // The sample's List ends with its items: one more item is appended as text.
  std::ofstream(seed) << read_text(fs::path(GPUSHARE_SOURCE_DIR) /
                                   "deploy/samples/dra-cluster.yaml")
                      << R"(- apiVersion: v1
  kind: Pod
  metadata:
    name: legacy
    namespace: ops
    uid: 7d0c6a1e-0000-4000-8000-000000000001
    annotations: {ALIYUN_COM_GPU_MEM_IDX: "1", ALIYUN_COM_GPU_MEM_POD: "6", ALIYUN_COM_GPU_MEM_ASSIGNED: "true"}
  spec:
    nodeName: plugin-node
    containers:
    - name: main
      resources: {limits: {aliyun.com/gpu-mem: "6"}}
  status: {phase: Running}
)";
  FakeApiServerProcess api(seed, work_);
  Extender extender(std::vector<std::string>{"--kubeconfig", api.kubeconfig().string()}, work_);
  // The DRA objects arrive through their own watches: wait until both claims are counted.
  Json inspect;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    auto res = extender.client().Get("/gpushare-scheduler/inspect");
    inspect = res && res->status == 200 ? Json::parse(res->body) : Json::object();
    int claims = 0;
    for (const Json& node : inspect.value("nodes", Json::array())) {
      for (const Json& dev : node["devs"])
        claims += static_cast<int>(dev.value("draClaims", Json::array()).size());
    }
    if (claims == 2 && inspect.value("usedGPU", 0) == 51) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << inspect.dump();
    std::this_thread::sleep_for(100ms);
  }
  Browser browser(work_);
  browser.navigate(extender.url("/ui/?refresh=0"));
  wait_for_first_render(browser);
  const Json page = read_page(browser, true);
  expect_page_matches(page, inspect, true);

  std::map<std::string, Json> tiles;
  for (const Json& tile : page["tiles"]) tiles[tile["node"]] = tile;
  const Json& node_a = tiles.at("dra-node-a");
  ASSERT_EQ(node_a["gpus"].size(), 2u);
  ASSERT_EQ(node_a["gpus"][0]["segs"].size(), 1u);
  const Json& claim = node_a["gpus"][0]["segs"][0];
  EXPECT_TRUE(claim["dra"].get<bool>());
  EXPECT_EQ(
      claim["title"],
      "DRA claim ml/notebook-gpu (ml/notebook)\n30\u00a0GiB on GPU 0 (device dra-node-a/gpu-0)");
  EXPECT_EQ(node_a["gpus"][0]["free"], "10\u00a0GiB free");
  EXPECT_EQ(node_a["draClaims"],
            Json::array({"DRA claim ml/notebook-gpu (ml/notebook) on GPU\u00a00: 30\u00a0GiB"}));
  EXPECT_EQ(tiles.at("dra-node-b")["draClaims"],
            Json::array({"DRA claim ml/serving-gpu (ml/serving) on GPU\u00a00: 15\u00a0GiB"}));
  // The device-plugin pod beside them: a pod segment, filled, no claim.
  const Json& plugin_gpu = tiles.at("plugin-node")["gpus"][1];
  ASSERT_EQ(plugin_gpu["segs"].size(), 1u);
  EXPECT_FALSE(plugin_gpu["segs"][0]["dra"].get<bool>());
  EXPECT_EQ(plugin_gpu["segs"][0]["pod"], "ops/legacy");
  EXPECT_TRUE(plugin_gpu["segs"][0]["filled"].get<bool>());
  EXPECT_TRUE(tiles.at("plugin-node")["draClaims"].empty());
  EXPECT_EQ(page["draClaims"], "2");
  EXPECT_EQ(page["draHeld"], "45\u00a0GiB of GPU memory held");
  EXPECT_EQ(page["allocated"], "51\u00a0GiB of 184\u00a0GiB");
  EXPECT_EQ(page["allocatedSub"], "27.7% allocated to pods and DRA claims");

  // The filter finds a node by a claim's name.
  EXPECT_EQ(filter_to_one_tile(browser, "serving-gpu"), "dra-node-b");
}

// Live mode with --consolidate plan: n1's GPU holds pod b (4 of 16, opted in, owned by a
// ReplicaSet), n2's pod a (8 of 16): the Consolidation panel lists the move of b from n1/GPU0 to
// n2/GPU0 and the GPU it frees, as /inspect's "consolidation" section says.
TEST_F(WebUiBrowser, TheConsolidationPanelShowsThePlan) {
  const fs::path seed = work_ / "consolidation-cluster.yaml";
  std::ofstream(seed) << R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    capacity: {cpu: "32", memory: 128Gi, aliyun.com/gpu-mem: "16", aliyun.com/gpu-count: "1"}
    allocatable: {cpu: "32", memory: 128Gi, aliyun.com/gpu-mem: "16", aliyun.com/gpu-count: "1"}
- apiVersion: v1
  kind: Node
  metadata: {name: n2}
  status:
    capacity: {cpu: "32", memory: 128Gi, aliyun.com/gpu-mem: "16", aliyun.com/gpu-count: "1"}
    allocatable: {cpu: "32", memory: 128Gi, aliyun.com/gpu-mem: "16", aliyun.com/gpu-count: "1"}
- apiVersion: v1
  kind: Pod
  metadata:
    name: a
    namespace: default
    uid: 7d0c6a1e-0000-4000-8000-00000000000a
    annotations: {ALIYUN_COM_GPU_MEM_IDX: "0", ALIYUN_COM_GPU_MEM_POD: "8", ALIYUN_COM_GPU_MEM_ASSIGNED: "true"}
  spec:
    nodeName: n2
    containers:
    - name: main
      resources: {limits: {aliyun.com/gpu-mem: "8"}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: b
    namespace: default
    uid: 7d0c6a1e-0000-4000-8000-00000000000b
    labels: {app: web, gpushare.aliyun.com/consolidate: "true"}
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-web-uid, controller: true}
    annotations: {ALIYUN_COM_GPU_MEM_IDX: "0", ALIYUN_COM_GPU_MEM_POD: "4", ALIYUN_COM_GPU_MEM_ASSIGNED: "true"}
  spec:
    nodeName: n1
    containers:
    - name: main
      resources: {limits: {aliyun.com/gpu-mem: "4"}}
  status: {phase: Running}
)";
  FakeApiServerProcess api(seed, work_);
  Extender extender(
      std::vector<std::string>{"--kubeconfig", api.kubeconfig().string(), "--consolidate", "plan",
                               "--consolidate-interval", "1s"},
      work_);
  Json inspect;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    auto res = extender.client().Get("/gpushare-scheduler/inspect");
    inspect = res && res->status == 200 ? Json::parse(res->body) : Json::object();
    if (inspect.contains("consolidation") && inspect["consolidation"]["plan"].is_object()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << inspect.dump();
    std::this_thread::sleep_for(100ms);
  }
  Browser browser(work_);
  browser.navigate(extender.url("/ui/?refresh=0"));
  wait_for_first_render(browser);
  const Json panel = browser.execute(R"js(
    var c = document.getElementById('consolidation');
    return {hidden: c.hidden, title: c.querySelector('h2').textContent,
            plan: c.querySelector('.plan').textContent,
            moves: Array.prototype.map.call(c.querySelectorAll('tr[data-move]'), function (r) {
              return Array.prototype.map.call(r.cells, function (d) { return d.textContent; });
            })};
  )js");
  EXPECT_EQ(panel["hidden"], false) << panel.dump();
  EXPECT_EQ(panel["title"], "Consolidation plan") << panel.dump();
  EXPECT_EQ(panel["plan"], "Plan: move 1 pod(s) to free 1 GPU(s)") << panel.dump();
  ASSERT_EQ(panel["moves"].size(), 1u) << panel.dump();
  EXPECT_EQ(panel["moves"][0][0], "default/b");
  EXPECT_EQ(panel["moves"][0][1], "n1/GPU0");
  EXPECT_EQ(panel["moves"][0][2], "n2/GPU0");
  EXPECT_EQ(panel["moves"][0][3].get<std::string>().rfind("4\u00a0", 0), 0u) << panel.dump();
}

// A synthetic cluster: `nodes` GPU nodes of 1, 2, 4 or 8 GPUs of 16, 24, 32 or 80 units, GPUs
// filled by pods of common sizes, some GPUs unhealthy. Deterministic.
Json synthetic_cluster(int nodes) {
  Json items = Json::array();
  std::uint64_t seed = 42;
  auto next = [&seed](int bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(bound));
  };
  const int gpu_counts[] = {1, 2, 4, 8};
  const int gpu_sizes[] = {16, 24, 32, 80};
  const int requests[] = {2, 4, 6, 8, 10, 12, 16};
  const char* namespaces[] = {"ml", "research", "inference", "batch", "notebooks"};
  int pod_index = 0;
  for (int n = 0; n < nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "gpu-%04d", n);
    const int count = gpu_counts[next(4)];
    const int size = gpu_sizes[next(4)];
    const std::string total = std::to_string(count * size);
    const Json capacity = {{"cpu", "64"},
                           {"memory", "256Gi"},
                           {"aliyun.com/gpu-mem", total},
                           {"aliyun.com/gpu-count", std::to_string(count)}};
    items.push_back(
        {{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata",
          {{"name", name},
           {"labels", {{"nvidia.com/gpu.product", size == 80 ? "A100-80GB" : "Tesla-T4"}}}}},
         {"status", {{"capacity", capacity}, {"allocatable", capacity}}}});
    if (next(25) == 0) {
      items.push_back(
          {{"apiVersion", "v1"},
           {"kind", "ConfigMap"},
           {"metadata",
            {{"name", std::string("unhealthy-gpu-") + name}, {"namespace", "kube-system"}}},
           {"data", {{"gpus", std::to_string(next(count))}}}});
    }
    for (int gpu = 0; gpu < count; ++gpu) {
      int free = size;
      const int pods = next(5);
      for (int p = 0; p < pods; ++p) {
        const int request = requests[next(7)];
        if (request > free) break;
        free -= request;
        const std::string pod_name = "job-" + std::to_string(pod_index++);
        items.push_back(
            {{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"metadata",
              {{"name", pod_name},
               {"namespace", namespaces[next(5)]},
               {"uid", "uid-" + pod_name},
               {"annotations",
                {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(gpu)},
                 {"ALIYUN_COM_GPU_MEM_POD", std::to_string(request)},
                 {"ALIYUN_COM_GPU_MEM_DEV", std::to_string(size)},
                 {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}}}}},
             {"spec",
              {{"nodeName", name},
               {"containers",
                Json::array(
                    {{{"name", "main"},
                      {"resources",
                       {{"limits", {{"aliyun.com/gpu-mem", std::to_string(request)}}}}}}})}}},
             {"status", {{"phase", "Running"}}}});
      }
    }
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// Not a timing assertion: the numbers are printed (and recorded as test properties) for the
// docs. What is asserted is that all 1 000 tiles are drawn and match /inspect.
TEST_F(WebUiBrowser, RendersAThousandNodes) {
  constexpr int kNodes = 1000;
  const fs::path cluster = work_ / "cluster-1000.json";
  std::ofstream(cluster) << synthetic_cluster(kNodes).dump();
  Extender extender(cluster, work_);
  auto inspect_res = extender.client().Get("/gpushare-scheduler/inspect");
  ASSERT_TRUE(inspect_res);
  const std::size_t inspect_bytes = inspect_res->body.size();
  const Json inspect = Json::parse(inspect_res->body);
  ASSERT_EQ(inspect["nodes"].size(), static_cast<std::size_t>(kNodes));

  Browser browser(work_, 1400, 900);
  browser.navigate(
      extender.url("/ui"));  // the bare path redirects to /ui/: the browser must follow
  wait_for_first_render(browser);
  const Json first = browser.execute(R"js(
    var s = window.gpushareUi;
    return {firstRenderAt: s.firstRenderAt, fetchMs: s.lastFetchMs, renderMs: s.lastRenderMs,
            tiles: document.querySelectorAll('#nodes .tile').length,
            bars: document.querySelectorAll('#nodes .gpu').length,
            segments: document.querySelectorAll('#nodes .seg').length};)js");
  // A full redraw (sort change), with style and layout forced, then the next frame painted.
  const Json redraw = browser.execute(R"js(
    return new Promise(function (resolve) {
      var t0 = performance.now();
      var s = document.getElementById('sort');
      s.value = 'frag-desc';
      s.dispatchEvent(new Event('change'));
      var built = performance.now();
      document.body.offsetHeight;
      var laidOut = performance.now();
      requestAnimationFrame(function () {
        setTimeout(function () {
          resolve({build: built - t0, layout: laidOut - t0, frame: performance.now() - t0});
        }, 0);
      });
    });)js");
  const Json filtered = browser.execute(R"js(
    var t0 = performance.now();
    var f = document.getElementById('filter');
    f.value = 'gpu-09';
    window.__filterStart = t0;
    f.dispatchEvent(new Event('input'));
    return true;)js");
  (void)filtered;
  const Json filter_count = browser.wait_for(R"js(
    var n = document.querySelectorAll('#nodes .tile').length;
    return n === 100 ? n : null;)js");
  EXPECT_EQ(filter_count, 100);

  EXPECT_EQ(first["tiles"], kNodes);
  // Back to everything, by name, and compare every tile and bar with /inspect.
  browser.execute(R"js(
    var f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input'));)js");
  browser.wait_for("return document.querySelectorAll('#nodes .tile').length === 1000;");
  expect_page_matches(read_page(browser, false), inspect, false);

  const double first_render = first["firstRenderAt"].get<double>();
  std::cout << "1000 nodes (" << first["bars"] << " GPU bars, " << first["segments"]
            << " pod segments, /inspect " << inspect_bytes / 1024 << " KiB):\n"
            << "  navigation start to first data drawn: " << first_render << " ms\n"
            << "  /inspect fetch + JSON.parse: " << first["fetchMs"] << " ms\n"
            << "  building and assigning the DOM: " << first["renderMs"] << " ms\n"
            << "  full redraw on sort change: build " << redraw["build"] << " ms, with layout "
            << redraw["layout"] << " ms, next frame " << redraw["frame"] << " ms\n";
  RecordProperty("first_render_ms", std::to_string(first_render));
  RecordProperty("fetch_ms", first["fetchMs"].dump());
  RecordProperty("render_ms", first["renderMs"].dump());
  RecordProperty("redraw_frame_ms", redraw["frame"].dump());
}

}  // namespace
}  // namespace gpushare::browser
