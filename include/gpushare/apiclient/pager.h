#pragma once
// The one list pager: follows continue tokens as client-go's pager does. The reflector, the
// leader's catch-up and the kubectl plugin all list through it.

#include <cstddef>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "gpushare/apiclient/api_client.h"

namespace gpushare::apiclient {

struct PagerOptions {
  Query query;                   // selectors; limit, resourceVersion and continue are added here
  std::string resource_version;  // first page only: the server rejects it with continue
  std::size_t page_size = 500;   // 0: ask for the whole list in one piece
  bool require_resource_version = false;             // a first page without one is a decode error
  std::optional<std::chrono::milliseconds> timeout;  // per page
  std::stop_token stop;
};

struct PagedList {
  std::string resource_version;    // of the first page
  bool paginated = false;          // the server split the list into pages
  bool restarted_unpaged = false;  // a continue token expired (410): listed again in one piece
};

// Lists `path`, handing each item to `on_item` as it is read (a 50 000-pod list is never held
// as one string or one JSON tree). `on_begin` is called before the first item and again if the
// list restarts, so the caller drops what it collected. A continue token that expires mid-list
// restarts the list once without paging, like client-go's pager.
Result<PagedList> list_paged(ApiClient& client, std::string_view path, const PagerOptions& options,
                             const std::function<void()>& on_begin,
                             const ListItemCallback& on_item);

}  // namespace gpushare::apiclient
