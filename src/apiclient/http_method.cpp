#include "gpushare/apiclient/http_method.h"

namespace gpushare::apiclient {

std::string_view to_string(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kPut:
      return "PUT";
    case HttpMethod::kPatch:
      return "PATCH";
    case HttpMethod::kDelete:
      return "DELETE";
  }
  return "GET";
}

}  // namespace gpushare::apiclient
