// pods/eviction as the real registry serves it (pkg/registry/core/pod/storage/eviction.go):
// the UID precondition, the one PodDisruptionBudget whose selector matches the pod (its
// disruptionsAllowed checked and decremented, the pod recorded in disruptedPods), then the
// pod's deletion, graceful as a DELETE's would be.

#include <fmt/format.h>

#include <set>

#include "fakeapi/fake_apiserver_impl.h"

namespace gpushare::testing {

using nlohmann::json;
using namespace fakeapi;

namespace {

std::map<std::string, std::string> labels_of(const json& object) {
  std::map<std::string, std::string> labels;
  const json* metadata = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (metadata == nullptr || !metadata->contains("labels") || !(*metadata)["labels"].is_object())
    return labels;
  for (const auto& [key, value] : (*metadata)["labels"].items()) {
    if (value.is_string()) labels[key] = value.get<std::string>();
  }
  return labels;
}

// metav1.LabelSelectorAsSelector then Matches; nullopt for a selector that does not convert
// (the registry skips such a budget). An empty or absent selector matches nothing here: the
// eviction registry's rule, not the disruption controller's.
std::optional<bool> selector_matches(const json& selector,
                                     const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) return false;
  bool any = false;
  if (selector.contains("matchLabels") && selector["matchLabels"].is_object()) {
    for (const auto& [key, value] : selector["matchLabels"].items()) {
      if (!value.is_string()) return std::nullopt;
      any = true;
      const auto it = labels.find(key);
      if (it == labels.end() || it->second != value.get<std::string>()) return false;
    }
  }
  if (selector.contains("matchExpressions") && selector["matchExpressions"].is_array()) {
    for (const json& expression : selector["matchExpressions"]) {
      const std::string key = expression.value("key", "");
      const std::string op = expression.value("operator", "");
      std::set<std::string> values;
      if (expression.contains("values") && expression["values"].is_array()) {
        for (const json& v : expression["values"]) {
          if (v.is_string()) values.insert(v.get<std::string>());
        }
      }
      any = true;
      const auto it = labels.find(key);
      if (op == "In") {
        if (values.empty()) return std::nullopt;
        if (it == labels.end() || !values.contains(it->second)) return false;
      } else if (op == "NotIn") {
        if (values.empty()) return std::nullopt;
        if (it != labels.end() && values.contains(it->second)) return false;
      } else if (op == "Exists") {
        if (!values.empty()) return std::nullopt;
        if (it == labels.end()) return false;
      } else if (op == "DoesNotExist") {
        if (!values.empty()) return std::nullopt;
        if (it != labels.end()) return false;
      } else {
        return std::nullopt;
      }
    }
  }
  return any;
}

std::int64_t int_at(const json& object, std::string_view a, std::string_view b) {
  if (!object.contains(a) || !object[a].is_object()) return 0;
  const json& inner = object[a];
  if (!inner.contains(b) || !inner[b].is_number_integer()) return 0;
  return inner[b].get<std::int64_t>();
}

}  // namespace

void FakeApiServer::Impl::http_evict(const Route& route, const std::string& body) {
  const json eviction = json::parse(body, nullptr, false);
  if (eviction.is_discarded()) throw bad_request("the body of the request is not valid JSON");
  if (!eviction.is_object()) throw bad_request("the body of the request must be a JSON object");
  const std::string name = string_at(eviction, "metadata", "name");
  if (name != route.name) throw bad_request("name in URL does not match name in Eviction object");
  {
    std::lock_guard lock(mutex);
    const json& pod = find_or_throw(Resource::Pods, route.ns, route.name);
    const std::string pod_uid = string_at(pod, "metadata", "uid");
    const std::string uid = string_at(eviction, "deleteOptions", "preconditions", "uid");
    if (!uid.empty() && uid != pod_uid) {
      throw conflict("", "pods", route.name,
                     fmt::format("Precondition failed: UID in precondition: {}, UID in object "
                                 "meta: {}",
                                 uid, pod_uid));
    }
    // canIgnorePDB: a finished, pending or terminating pod is deleted without a budget check.
    const std::string phase = string_at(pod, "status", "phase");
    const bool ignore_budget = phase == "Succeeded" || phase == "Failed" || phase == "Pending" ||
                               pod["metadata"].contains("deletionTimestamp");
    if (!ignore_budget) {
      const auto labels = labels_of(pod);
      std::vector<const json*> budgets;
      for (const auto& [key, budget] : store.objects(Resource::PodDisruptionBudgets)) {
        if (namespace_of(budget) != route.ns) continue;
        const json spec = budget.value("spec", json::object());
        const auto matches = selector_matches(spec.value("selector", json()), labels);
        if (matches.value_or(false)) budgets.push_back(&budget);
      }
      if (budgets.size() > 1) {
        throw ApiError(500, "",
                       "This pod has more than one PodDisruptionBudget, which the eviction "
                       "subresource does not support.");
      }
      if (budgets.size() == 1) {
        const json& budget = *budgets.front();
        const std::string budget_name = name_of(budget);
        const auto too_many = [&](std::string cause) {
          return ApiError(
              429, "TooManyRequests",
              "Cannot evict pod as it would violate the pod's disruption budget.",
              {{"causes", json::array({{{"reason", "DisruptionBudget"}, {"message", cause}}})}});
        };
        const std::int64_t generation = budget["metadata"].value("generation", std::int64_t{0});
        if (int_at(budget, "status", "observedGeneration") < generation) {
          throw too_many(fmt::format(
              "The disruption budget {} is still being processed by the server.", budget_name));
        }
        const std::int64_t allowed = int_at(budget, "status", "disruptionsAllowed");
        if (allowed < 0) {
          throw ApiError(
              403, "Forbidden",
              fmt::format("poddisruptionbudgets.policy \"{}\" is forbidden: pdb "
                          "disruptions allowed is negative",
                          budget_name),
              {{"name", budget_name}, {"group", "policy"}, {"kind", "poddisruptionbudgets"}});
        }
        if (allowed == 0) {
          throw too_many(
              fmt::format("The disruption budget {} needs {} healthy pods and has {} "
                          "currently",
                          budget_name, int_at(budget, "status", "desiredHealthy"),
                          int_at(budget, "status", "currentHealthy")));
        }
        json updated = budget;
        updated["status"]["disruptionsAllowed"] = allowed - 1;
        updated["status"]["disruptedPods"][route.name] = rfc3339_now();
        store.modify(Resource::PodDisruptionBudgets, std::move(updated));
      }
    }
    // The pod's deletion: graceful for a pod on a node that has not finished.
    const std::string key = make_key(Resource::Pods, route.ns, route.name);
    const std::int64_t grace = pod["spec"].value("terminationGracePeriodSeconds", std::int64_t{30});
    const bool graceful = !string_at(pod, "spec", "nodeName").empty() && phase != "Succeeded" &&
                          phase != "Failed" && grace > 0;
    if (!graceful) {
      store.erase(Resource::Pods, key);
    } else if (!pod["metadata"].contains("deletionTimestamp")) {
      json updated = pod;
      updated["metadata"]["deletionTimestamp"] = rfc3339_now(grace);
      updated["metadata"]["deletionGracePeriodSeconds"] = grace;
      store.modify(Resource::Pods, std::move(updated));
    }
  }
  changed.notify_all();
}

}  // namespace gpushare::testing
