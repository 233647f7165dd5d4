#include "cmd/inspect/sources.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>
#include <map>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/pager.h"
#include "gpushare/core/cluster_model.h"
#include "gpushare/inspect/document.h"
#include "gpushare/inspect/view.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::cmd::inspect {
namespace {

using kube::Json;

constexpr std::string_view kPrefix = "/gpushare-scheduler";

struct SplitUrl {
  std::string origin;  // scheme://host[:port]
  std::string path;    // starts with '/' or is empty
};

SplitUrl split_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  const std::string_view scheme =
      scheme_end == std::string_view::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    throw gpushare::inspect::InspectError(
        fmt::format("--extender {}: want http://HOST:PORT or https://HOST:PORT", url));
  }
  const auto path_start = url.find('/', scheme_end + 3);
  if (path_start == std::string_view::npos) return {std::string(url), ""};
  return {std::string(url.substr(0, path_start)), std::string(url.substr(path_start))};
}

std::string encode_segment(std::string_view segment) {
  std::string out;
  for (unsigned char c : segment) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string api_hint(const apiclient::ApiError& error) {
  if (error.is_unauthorized()) return " (check the credentials of --kubeconfig / --context)";
  if (error.is_forbidden()) return " (your user needs get/list on nodes and pods cluster-wide)";
  if (error.is_transport()) return " (is the API server reachable? or use --extender URL)";
  return "";
}

struct ListFailure {
  apiclient::ApiError error;
};

// Every item of a collection, through the one pager (apiclient/pager.h), to `on_item`;
// `on_begin` drops what was collected when the list restarts.
void list_each(apiclient::ApiClient& client, const std::string& path, const apiclient::Query& query,
               const std::function<void()>& on_begin, const apiclient::ListItemCallback& on_item) {
  apiclient::PagerOptions pager;
  pager.query = query;
  auto listed = apiclient::list_paged(client, path, pager, on_begin, on_item);
  if (!listed) throw ListFailure{listed.error()};
}

std::vector<Json> list_all(apiclient::ApiClient& client, const std::string& path,
                           const apiclient::Query& query) {
  std::vector<Json> items;
  // The plugin's views read trees; a list of a few thousand objects converts quickly.
  list_each(
      client, path, query, [&] { items.clear(); },
      [&](const json::Value& item) { items.push_back(Json::parse(simdjson::minify(item))); });
  return items;
}

// Every object of a resource.k8s.io collection, decoded; one that does not decode is skipped
// with a warning naming it.
template <typename T, typename Decode>
std::vector<T> list_decoded(apiclient::ApiClient& client, const std::string& path,
                            const apiclient::Query& query, std::string_view kind, Decode decode,
                            std::vector<std::string>& warnings) {
  std::vector<T> objects;
  std::vector<std::string> skipped;
  list_each(
      client, path, query,
      [&] {
        objects.clear();
        skipped.clear();
      },
      [&](const json::Value& item) {
        try {
          objects.push_back(decode(item));
        } catch (const std::exception& e) {
          skipped.push_back(fmt::format("skipping a {}: {}", kind, e.what()));
        }
      });
  warnings.insert(warnings.end(), skipped.begin(), skipped.end());
  return objects;
}

constexpr std::string_view kDraApi = "/apis/resource.k8s.io/v1";

// The DRA objects API mode shows (ResourceSlices of the driver, of `node` only when given, and
// every ResourceClaim). Not served (404): none, silently, as the extender does. Any other error:
// a warning, and none.
DraObjects read_dra(apiclient::ApiClient& client, const core::DraConfig& config,
                    const std::optional<std::string>& node, std::vector<std::string>& warnings) {
  DraObjects dra;
  dra.config = config;
  dra.whole_cluster = !node.has_value();
  std::string selector = "spec.driver=" + config.driver;
  if (node) selector += ",spec.nodeName=" + *node;
  std::vector<std::string> skipped;
  try {
    dra.slices = list_decoded<core::DraSlice>(client, std::string(kDraApi) + "/resourceslices",
                                              {{"fieldSelector", selector}}, "ResourceSlice",
                                              kube::decode_resource_slice, skipped);
    dra.claims =
        list_decoded<core::DraClaim>(client, std::string(kDraApi) + "/resourceclaims", {},
                                     "ResourceClaim", kube::decode_resource_claim, skipped);
  } catch (const ListFailure& failure) {
    if (!failure.error.is_not_found()) {
      warnings.push_back(fmt::format(
          "cannot list {} ResourceSlices and ResourceClaims ({}); GPUs published through DRA "
          "and the claims holding them are not shown{}",
          kDraApi.substr(6), failure.error.describe(),
          failure.error.is_forbidden()
              ? " (your user needs list on resourceslices and resourceclaims)"
              : ""));
    }
    return {config, {}, {}, dra.whole_cluster};
  }
  warnings.insert(warnings.end(), skipped.begin(), skipped.end());
  return dra;
}

}  // namespace

std::string inspect_url(std::string_view base, const std::optional<std::string>& node) {
  SplitUrl url = split_url(base);
  while (!url.path.empty() && url.path.back() == '/') url.path.pop_back();
  if (url.path.ends_with("/inspect")) {
    // already the full path
  } else if (url.path.ends_with(kPrefix)) {
    url.path += "/inspect";
  } else {
    url.path += std::string(kPrefix) + "/inspect";  // also behind a prefix, e.g. kubectl proxy
  }
  if (node) url.path += "/" + encode_segment(*node);
  return url.origin + url.path;
}

namespace {

// GETs `full` from the extender; throws InspectError when nothing answers.
httplib::Result get_from_extender(const ExtenderSource& source, const std::string& full) {
  const SplitUrl url = split_url(full);
  httplib::Client client(url.origin);
  client.set_connection_timeout(source.timeout);
  client.set_read_timeout(source.timeout);
  if (source.insecure_skip_tls_verify) client.enable_server_certificate_verification(false);
  auto response = client.Get(url.path);
  if (!response) {
    throw gpushare::inspect::InspectError(fmt::format("cannot reach the extender at {}: {}", full,
                                                      httplib::to_string(response.error())));
  }
  return response;
}

}  // namespace

Json fetch_from_extender(const ExtenderSource& source, const std::optional<std::string>& node) {
  const std::string full = inspect_url(source.url, node);
  auto response = get_from_extender(source, full);
  if (response->status == 404 && node) {
    throw gpushare::inspect::InspectError(
        fmt::format("node {} is not known to the extender ({})", *node, full));
  }
  if (response->status != 200) {
    throw gpushare::inspect::InspectError(
        fmt::format("GET {}: HTTP {}: {}", full, response->status, response->body.substr(0, 200)));
  }
  Json body = Json::parse(response->body, nullptr, false);
  if (body.is_discarded())
    throw gpushare::inspect::InspectError(fmt::format("GET {}: the answer is not JSON", full));
  (void)gpushare::inspect::cluster_view(
      body);  // validates the shape, with a clear message if it is not /inspect
  return body;
}

Json fetch_consolidation(const ExtenderSource& source) {
  std::string full = inspect_url(source.url, std::nullopt);
  full.replace(full.size() - std::string_view("inspect").size(), std::string::npos,
               "consolidation");
  auto response = get_from_extender(source, full);
  Json body = Json::parse(response->body, nullptr, false);
  if (response->status != 200) {
    const std::string said = body.is_object() && body.contains("Error") && body["Error"].is_string()
                                 ? body["Error"].get<std::string>()
                                 : response->body.substr(0, 200);
    throw gpushare::inspect::InspectError(
        fmt::format("GET {}: HTTP {}: {}", full, response->status, said));
  }
  if (!body.is_object())
    throw gpushare::inspect::InspectError(fmt::format("GET {}: the answer is not JSON", full));
  return body;
}

Json snapshot_from_objects(const std::vector<Json>& nodes, const std::vector<Json>& pods,
                           const std::vector<Json>& configmaps, const DraObjects& dra,
                           const kube::ResourceNames& names, std::vector<std::string>& warnings) {
  core::ClusterModel model;
  // Before the nodes, so that each node is built with its DRA GPUs and their claims at once.
  model.update_dra([&](core::DraState& state) {
    state.set_config(dra.config);
    state.replace_slices(dra.slices);
    state.replace_claims(dra.claims);
  });
  for (const Json& configmap : configmaps) {
    if (auto unhealthy = kube::parse_unhealthy_configmap(configmap)) {
      for (const auto& entry : unhealthy->rejected) {
        warnings.push_back(fmt::format("ConfigMap unhealthy-gpu-{}: ignoring entry \"{}\"",
                                       unhealthy->node, entry));
      }
      model.set_unhealthy(unhealthy->node, unhealthy->indices);
    }
  }
  for (const Json& node : nodes) {
    try {
      model.upsert_node(kube::parse_node(node, names));
    } catch (const kube::BadInput& e) {
      warnings.push_back(fmt::format("skipping a node: {}", e.what()));
    }
  }
  std::map<std::string, std::string, std::less<>> phases;
  for (const Json& pod : pods) {
    try {
      kube::PodInfo info = kube::parse_pod(pod, names);
      if (info.uid.empty()) info.uid = info.key();  // the model keys pods by UID
      auto allocation = kube::allocation_of(info);
      if (!allocation || !allocation->holds_gpu()) continue;  // the plugin shows GPUs only
      phases[info.uid] = info.phase;
      model.add_pod(std::move(*allocation));
    } catch (const kube::BadInput& e) {
      warnings.push_back(fmt::format("skipping a pod: {}", e.what()));
    }
  }
  // The extender logs these; here they explain a GPU or claim missing from the tables. For one
  // node the claims on every other node name devices not listed: only the slices' are told.
  for (const auto& warning : model.dra().warnings(
           [&](std::string_view name) { return model.find_node(name) != nullptr; })) {
    if (dra.whole_cluster || !warning.starts_with("ResourceClaim "))
      warnings.push_back("DRA: " + warning);
  }
  // No policy: the extender's, not known here.
  gpushare::inspect::Document document = gpushare::inspect::Document::cluster(model, nullptr);
  document.add({[&](std::string_view uid, std::string_view, std::string_view) {
                  const auto it = phases.find(uid);
                  return it == phases.end() ? std::nullopt : std::optional<std::string>(it->second);
                },
                std::nullopt, std::nullopt, std::nullopt});
  return std::move(document.json());
}

Json fetch_from_api(apiclient::ApiClient& client, const kube::ResourceNames& names,
                    const core::DraConfig& dra_config, const std::optional<std::string>& node,
                    std::vector<std::string>& warnings) {
  std::vector<Json> nodes;
  std::vector<Json> pods;
  std::vector<Json> configmaps;
  // kube-scheduler's own pod selector: finished pods hold nothing.
  std::string pod_selector = "status.phase!=Succeeded,status.phase!=Failed";
  try {
    if (node) {
      auto result = client.get("/api/v1/nodes/" + encode_segment(*node));
      if (!result) {
        if (result.error().is_not_found())
          throw gpushare::inspect::InspectError(fmt::format("node {} not found", *node));
        throw ListFailure{result.error()};
      }
      nodes.push_back(std::move(result.value()));
      pod_selector += ",spec.nodeName=" + *node;
    } else {
      nodes = list_all(client, "/api/v1/nodes", {});
    }
    pods = list_all(client, "/api/v1/pods", {{"fieldSelector", pod_selector}});
  } catch (const ListFailure& failure) {
    throw gpushare::inspect::InspectError(
        fmt::format("reading the cluster from {}: {}{}", client.config().server,
                    failure.error.describe(), api_hint(failure.error)));
  }
  try {
    configmaps = list_all(
        client, "/api/v1/namespaces/" + encode_segment(names.unhealthy_namespace) + "/configmaps",
        {});
  } catch (const ListFailure& failure) {
    // Health is an extra: say so and show the rest.
    warnings.push_back(
        fmt::format("cannot list ConfigMaps in {} ({}); unhealthy GPUs are not shown",
                    names.unhealthy_namespace, failure.error.describe()));
  }
  const DraObjects dra = read_dra(client, dra_config, node, warnings);
  return snapshot_from_objects(nodes, pods, configmaps, dra, names, warnings);
}

}  // namespace gpushare::cmd::inspect
