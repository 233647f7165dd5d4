#include "gpushare/apiclient/pager.h"

#include <spdlog/spdlog.h>

#include "gpushare/apiclient/api_error.h"

namespace gpushare::apiclient {

namespace {

Result<PagedList> list_pages(ApiClient& client, std::string_view path, const PagerOptions& options,
                             bool paged, const std::function<void()>& on_begin,
                             const ListItemCallback& on_item) {
  PagedList out;
  std::string continue_token;
  if (on_begin) on_begin();
  for (bool first_page = true;; first_page = false) {
    RequestOptions request;
    request.stop = options.stop;
    request.timeout = options.timeout;
    request.query = options.query;
    if (paged) request.query.emplace_back("limit", std::to_string(options.page_size));
    if (first_page) {
      if (!options.resource_version.empty())
        request.query.emplace_back("resourceVersion", options.resource_version);
    } else {
      request.query.emplace_back("continue", continue_token);
    }
    auto page = client.list(path, on_item, request);
    if (!page.ok()) {
      if (!first_page && page.error().is_expired()) {
        spdlog::info("list {}: continue token expired; listing without paging", path);
        auto whole = list_pages(client, path, options, /*paged=*/false, on_begin, on_item);
        if (whole.ok()) whole.value().restarted_unpaged = true;
        return whole;
      }
      return page.error();
    }
    if (first_page) {
      out.resource_version = page.value().resource_version;
      if (options.require_resource_version && out.resource_version.empty()) {
        return decode_error("list response has no metadata.resourceVersion");
      }
    }
    spdlog::debug("list {}: page of {} items, {} bytes", path, page.value().items,
                  page.value().body_bytes);
    const std::string& next = page.value().continue_token;
    if (next.empty() || !paged) break;
    out.paginated = true;
    continue_token = next;
  }
  return out;
}

}  // namespace

Result<PagedList> list_paged(ApiClient& client, std::string_view path, const PagerOptions& options,
                             const std::function<void()>& on_begin,
                             const ListItemCallback& on_item) {
  return list_pages(client, path, options, options.page_size > 0, on_begin, on_item);
}

}  // namespace gpushare::apiclient
