// The web view (/ui) over real HTTP: the page and its assets are served from the binary with the
// right content types, reference nothing outside the extender, and the /inspect fields the page
// draws (fragmentedGPU) are there and correct.

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

ExtenderUnderTest make_extender(const std::string& policy = "binpack") {
  // gpu-a: GPU 0 has 6 of 16 free, GPU 1 is idle. gpu-b: idle. cpu: no GPUs.
  return ExtenderUnderTest(
      cluster_list({node_object("gpu-a", 2, 32), node_object("gpu-b", 2, 32),
                    node_object("cpu", -1, -1), pod_object("p1", "uid-p1", 10, "gpu-a", 0),
                    pod_object("p2", "uid-p2", 12)}),
      policy);
}

void expect_redirect(httplib::Client& client, const std::string& path,
                     const std::string& location) {
  auto res = client.Get(path);
  ASSERT_TRUE(res) << path;
  EXPECT_EQ(res->status, 302) << path;
  EXPECT_EQ(res->get_header_value("Location"), location) << path;
}

TEST(WebUi, UiRedirectsToTheFolderSoRelativeAssetPathsWork) {
  auto extender = make_extender();
  auto client = extender.client();
  expect_redirect(client, "/ui", "ui/");

  // "ui/" relative to /ui is /ui/ (RFC 3986, 5.2); httplib does not resolve relative locations.
  auto followed = client.Get("/ui/");
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->status, 200);
  EXPECT_NE(followed->body.find("<!DOCTYPE html>"), std::string::npos);
}

// People know the /gpushare-scheduler/ prefix: its ui leads to the page, query kept, by a
// relative Location that also works behind a path-prefixing proxy.
TEST(WebUi, TheSchedulerPrefixsUiRedirectsToThePage) {
  auto extender = make_extender();
  auto client = extender.client();
  expect_redirect(client, "/gpushare-scheduler/ui", "../ui/");  // from /gpushare-scheduler/ui: /ui/
  expect_redirect(client, "/gpushare-scheduler/ui/?filter=gpu-a&refresh=0",
                  "../../ui/?filter=gpu-a&refresh=0");
}

// What the page draws besides the model: each pod's phase (bound but not running yet is drawn
// apart) and the configuration warnings (none in standalone mode: it refuses a faulty file).
TEST(WebUi, InspectCarriesPodPhasesAndConfigWarnings) {
  ExtenderUnderTest extender(
      cluster_list({node_object("gpu-a", 2, 32), pod_object("p1", "uid-p1", 10, "gpu-a", 0),
                    pod_object("p2", "uid-p2", 4, "gpu-a", 1, "Pending")}));
  const Json inspect = extender.inspect();
  const Json& devs = inspect["nodes"][0]["devs"];
  EXPECT_EQ(devs[0]["pods"][0]["phase"], "Running");
  EXPECT_EQ(devs[1]["pods"][0]["phase"], "Pending");
  EXPECT_EQ(inspect["configWarnings"], Json::array());
}

TEST(WebUi, ServesThePageWithHtmlTypeAndARestrictiveContentSecurityPolicy) {
  auto extender = make_extender();
  for (const char* path : {"/ui/", "/ui/index.html"}) {
    auto res = extender.client().Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8") << path;
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    const std::string csp = res->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(res->body.find("id=\"nodes\""), std::string::npos);
  }
}

// Every src= and href= of the page is relative, and resolves to something this extender serves
// with the content type the browser needs.
TEST(WebUi, PageReferencesOnlyAssetsTheExtenderServes) {
  auto extender = make_extender();
  auto client = extender.client();
  auto page = client.Get("/ui/");
  ASSERT_TRUE(page);
  const std::regex attribute(R"re(\b(src|href)\s*=\s*"([^"]*)")re", std::regex::icase);
  std::set<std::string> references;
  for (auto it = std::sregex_iterator(page->body.begin(), page->body.end(), attribute);
       it != std::sregex_iterator(); ++it) {
    references.insert((*it)[2].str());
  }
  ASSERT_TRUE(references.count("app.js")) << "the page must load its script";
  ASSERT_TRUE(references.count("style.css")) << "the page must load its style sheet";
  for (const std::string& ref : references) {
    SCOPED_TRACE(ref);
    EXPECT_EQ(ref.find("//"), std::string::npos) << "absolute or protocol-relative reference";
    EXPECT_EQ(ref.find(':'), std::string::npos) << "reference with a scheme";
    ASSERT_FALSE(ref.empty());
    EXPECT_NE(ref.front(), '/') << "root-relative references break behind path-prefixing proxies";
    // Resolve against /ui/ as a browser would.
    const std::string path = ref.rfind("../", 0) == 0 ? "/" + ref.substr(3) : "/ui/" + ref;
    auto res = client.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << path;
    const std::string type = res->get_header_value("Content-Type");
    if (ref.ends_with(".js")) {
      EXPECT_EQ(type, "text/javascript; charset=utf-8");
    } else if (ref.ends_with(".css")) {
      EXPECT_EQ(type, "text/css; charset=utf-8");
    }
  }
}

TEST(WebUi, ScriptAndStyleSheetLoadNothingFromElsewhere) {
  auto extender = make_extender();
  auto client = extender.client();
  auto script = client.Get("/ui/app.js");
  auto style = client.Get("/ui/style.css");
  ASSERT_TRUE(script);
  ASSERT_TRUE(style);
  ASSERT_EQ(script->status, 200);
  ASSERT_EQ(style->status, 200);
  for (const auto* body : {&script->body, &style->body}) {
    EXPECT_EQ(body->find("http://"), std::string::npos);
    EXPECT_EQ(body->find("https://"), std::string::npos);
    EXPECT_EQ(body->find("@import"), std::string::npos);
  }
  EXPECT_EQ(style->body.find("url("), std::string::npos) << "no fonts or images to fetch";
  // The only thing the script fetches is the extender's own /inspect, relative to /ui/.
  const std::regex fetch_url(R"re(['"]([^'"]*gpushare-scheduler/[^'"]*)['"])re");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(script->body, match, fetch_url));
  EXPECT_EQ(match[1].str(), "../gpushare-scheduler/inspect");
}

// The page draws ?unit= into its HTML: markup there reached innerHTML (fake figures, text).
TEST(WebUi, OnlyKnownUnitsAreAccepted) {
  auto extender = make_extender();
  auto client = extender.client();
  for (const char* path : {"/ui/?unit=GiB", "/ui/?unit=MiB", "/ui/index.html?unit=MiB"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
  }
  for (const char* path :
       {"/ui/?unit=%3Cb%3Ex%3C%2Fb%3E", "/ui/?unit=GiB%22%20style%3D", "/ui/index.html?unit=TiB"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 400) << path;
    EXPECT_EQ(res->body.find('<'), std::string::npos) << path;
  }
  // And the script accepts no other value, whatever serves the page.
  const std::string script = client.Get("/ui/app.js")->body;
  EXPECT_NE(script.find("text === 'GiB' || text === 'MiB' ? text : ''"), std::string::npos);
}

TEST(WebUi, UnknownAssetsAndTraversalAre404) {
  auto extender = make_extender();
  auto client = extender.client();
  for (const char* path : {"/ui/missing.js", "/ui/..%2Fmetrics", "/ui/sub/app.js", "/ui/.."}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
}

// Browsers accept br, and httplib's brotli (slowest quality) costs seconds per MB of /inspect:
// the page's every refresh would. Such clients get gzip, and the body is intact.
TEST(WebUi, BrowsersGetGzipNotBrotli) {
  auto extender = make_extender();
  const std::string plain = extender.client().Get("/gpushare-scheduler/inspect")->body;
  for (const char* path : {"/gpushare-scheduler/inspect", "/ui/app.js", "/metrics"}) {
    auto client = extender.client();
    client.set_decompress(false);
    auto res = client.Get(path, {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip") << path;
    auto only_br = client.Get(path, {{"Accept-Encoding", "br"}});
    ASSERT_TRUE(only_br) << path;
    EXPECT_EQ(only_br->get_header_value("Content-Encoding"), "") << path;
  }
  auto client = extender.client();
  auto decoded = client.Get("/gpushare-scheduler/inspect", {{"Accept-Encoding", "br, gzip"}});
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->body, plain);
}

// kube-scheduler's Go client asks for gzip on every call; compressing a filter reply costs more
// CPU than it saves on a cluster network, so the scheduling verbs answer uncompressed.
TEST(WebUi, SchedulingVerbsAreNotCompressed) {
  auto extender = make_extender();
  auto client = extender.client();
  client.set_decompress(false);
  const std::string body = Json{{"Pod", pod_object("p", "uid-p", 1)}, {"NodeNames", {"n1"}}}.dump();
  for (const char* verb : {"filter", "prioritize"}) {
    auto res = client.Post(std::string("/gpushare-scheduler/") + verb,
                           {{"Accept-Encoding", "gzip"}}, body, "application/json");
    ASSERT_TRUE(res) << verb;
    EXPECT_EQ(res->status, 200) << verb;
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "") << verb;
    EXPECT_TRUE(Json::accept(res->body)) << verb;
  }
  auto inspect = client.Get("/gpushare-scheduler/inspect", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(inspect);
  EXPECT_EQ(inspect->get_header_value("Content-Encoding"), "gzip");
}

// The page sorts and sums by fragmentedGPU: FGD's measure with the built-in prior workload (per
// GPU of 16: 4, 8, 12 and 16 units, weights .25 .30 .10 .35) unless the fgd policy runs.
TEST(WebUi, InspectReportsFragmentationPerNodeAndCluster) {
  auto extender = make_extender();
  const Json inspect = extender.inspect();
  ASSERT_TRUE(inspect.contains("fragmentedGPU"));
  EXPECT_EQ(inspect["fragmentation"]["measure"], "fgd");
  EXPECT_EQ(inspect["fragmentation"]["workload"], "default-prior");
  std::map<std::string, double> by_node;
  for (const Json& node : inspect["nodes"])
    by_node[node["name"]] = node["fragmentedGPU"].get<double>();
  ASSERT_EQ(by_node.size(), 3u);
  // gpu-a: 6 free on GPU 0 is unusable by the 8, 12 and 16 shapes (weights .30+.10+.35).
  EXPECT_DOUBLE_EQ(by_node["gpu-a"], 4.5);
  EXPECT_DOUBLE_EQ(by_node["gpu-b"], 0.0);
  EXPECT_DOUBLE_EQ(by_node["cpu"], 0.0);
  EXPECT_DOUBLE_EQ(inspect["fragmentedGPU"].get<double>(), 4.5);

  // Binding p2 (12) to gpu-a fills GPU 1 to 4 free: 10 idle, in pieces of 6 and 4, that only the
  // 4 shape can use, so .75 * 10 is fragmented.
  const auto [status, reply] = extender.post(
      "bind",
      Json{
          {"PodName", "p2"}, {"PodNamespace", "default"}, {"PodUID", "uid-p2"}, {"Node", "gpu-a"}});
  ASSERT_EQ(status, 200) << reply;
  const Json after = extender.inspect();
  EXPECT_DOUBLE_EQ(after["nodes"][1]["fragmentedGPU"].get<double>(), 7.5) << after["nodes"][1];
  EXPECT_DOUBLE_EQ(after["fragmentedGPU"].get<double>(), 7.5);
}

TEST(WebUi, FragmentationFollowsTheFgdPolicysOwnTarget) {
  auto extender = make_extender("fgd");
  const Json inspect = extender.inspect();
  EXPECT_EQ(inspect["fragmentation"]["workload"], "policy-target");
  EXPECT_GE(inspect["fragmentation"]["shapes"].get<int>(), 1);
  for (const Json& node : inspect["nodes"]) {
    const double frag = node["fragmentedGPU"].get<double>();
    EXPECT_GE(frag, 0.0);
    EXPECT_LE(frag, node["totalGPU"].get<double>() - node["usedGPU"].get<double>());
  }
}

}  // namespace
}  // namespace gpushare::testing
