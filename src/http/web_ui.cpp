#include "gpushare/http/web_ui.h"

#include <httplib.h>

#include <string>

#include "gpushare_ui_assets.h"  // generated from src/http/ui/ by ui/embed.cmake

namespace gpushare::http {
namespace {

// The page needs nothing but itself and the extender: the policy tells the browser to load
// nothing from elsewhere (inline style attributes carry the bars' widths and colours).
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

void serve_asset(const WebAsset& asset, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
}

}  // namespace

const WebAsset* find_web_asset(std::string_view name) {
  for (const WebAsset& asset : ui_assets::kAssets) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

void install_web_ui(httplib::Server& server) {
  // A relative Location keeps working behind path-prefixing proxies (kubectl proxy, ingress):
  // the page and its assets are addressed relative to .../ui/.
  server.Get("/ui",
             [](const httplib::Request&, httplib::Response& res) { res.set_redirect("ui/", 302); });
  // Everything else the extender serves is under /gpushare-scheduler/, so people try
  // /gpushare-scheduler/ui first: send them to the page, keeping any query (?filter=...).
  // Relative again ("../ui/" from /gpushare-scheduler/ui), for the same proxies.
  auto to_ui = [](std::string_view up) {
    return [up](const httplib::Request& req, httplib::Response& res) {
      const auto query = req.target.find('?');
      res.set_redirect(
          std::string(up) + "ui/" + (query == std::string::npos ? "" : req.target.substr(query)),
          302);
    };
  };
  server.Get("/gpushare-scheduler/ui", to_ui("../"));
  server.Get("/gpushare-scheduler/ui/", to_ui("../../"));
  server.Get(R"(/ui/([A-Za-z0-9._-]*))", [](const httplib::Request& req, httplib::Response& res) {
    // The page draws ?unit= into its HTML: only the units it knows (the script checks too).
    if (req.has_param("unit") && req.get_param_value("unit") != "GiB" &&
        req.get_param_value("unit") != "MiB") {
      res.status = 400;
      res.set_content("unknown unit: use unit=GiB or unit=MiB\n", "text/plain");
      return;
    }
    std::string name = req.matches[1];
    if (name.empty()) name = "index.html";
    const WebAsset* asset = find_web_asset(name);
    if (asset == nullptr) {
      res.status = 404;
      res.set_content("no such asset\n", "text/plain");
      return;
    }
    serve_asset(*asset, res);
  });
}

}  // namespace gpushare::http
