#pragma once
// The web view: GET /ui/ serves a page (src/http/ui/, compiled into the binary) that draws
// the cluster from /gpushare-scheduler/inspect and refreshes it periodically.

#include <string_view>

namespace httplib {
class Server;
}

namespace gpushare::http {

struct WebAsset {
  std::string_view name;  // path under /ui/: "index.html", "app.js", "style.css"
  std::string_view content_type;
  std::string_view body;
};

// Installs GET /ui (redirects to /ui/), /ui/ (the page) and /ui/<asset>.
void install_web_ui(httplib::Server& server);

// The embedded asset named `name`, or nullptr if none.
const WebAsset* find_web_asset(std::string_view name);

}  // namespace gpushare::http
