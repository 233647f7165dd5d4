// A pod's pin to GPU models: read from nodeSelector and required node affinity on the GPU-model
// label (kube/pod_pin.h), matched as kube-scheduler matches it and resolved against the models
// a cluster's GPU nodes carry (core/model_pin.h).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/model_pin.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare {
namespace {

using core::ModelPin;
using core::PinOperator;
using kube::Json;
using Models = std::vector<std::string>;

constexpr std::string_view kLabel = "nvidia.com/gpu.product";
const std::string kNone(core::kNoModelMatches);

Json pod_with_spec(Json spec) {
  spec["containers"] =
      Json::array({{{"name", "main"}, {"resources", {{"limits", {{"aliyun.com/gpu-mem", "4"}}}}}}});
  return {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "u1"}}}, {"spec", spec}};
}

Json expression(std::string_view key, std::string_view op, Json values = nullptr) {
  Json e = {{"key", key}, {"operator", op}};
  if (!values.is_null()) e["values"] = std::move(values);
  return e;
}

Json term(std::vector<Json> expressions) {
  return {{"matchExpressions", Json(std::move(expressions))}};
}

Json affinity(std::vector<Json> terms) {
  return {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms", Json(std::move(terms))}}}}}};
}

ModelPin pin_of(Json spec, kube::ResourceNames names = {}) {
  return kube::parse_pod(pod_with_spec(std::move(spec)), names).model_pin;
}

// What the pod may use among `present` (sorted; "" = GPU nodes without the label).
Models allowed(Json spec, const Models& present) {
  return core::resolve_models(pin_of(std::move(spec)), present);
}

const Models kFleet = {"A100", "T4", "V100"};
const Models kFleetWithUnlabelled = {"", "A100", "T4", "V100"};

TEST(ModelPin, APodWithoutSelectorOrAffinityIsUnpinned) {
  const ModelPin pin = pin_of(Json::object());
  EXPECT_FALSE(pin.pinned);
  EXPECT_EQ(pin.describe(), "");
  EXPECT_TRUE(core::resolve_models(pin, kFleet).empty());
}

TEST(ModelPin, NodeSelectorOnTheLabelIsIn) {
  const Json spec = {{"nodeSelector", {{"nvidia.com/gpu.product", "V100"}, {"zone", "a"}}}};
  EXPECT_EQ(allowed(spec, kFleet), Models{"V100"});
  EXPECT_EQ(pin_of(spec).describe(), "in (V100)");
  // Only the label itself, exactly (label keys are case-sensitive).
  EXPECT_FALSE(pin_of({{"nodeSelector", {{"NVIDIA.com/gpu.product", "V100"}}}}).pinned);
  EXPECT_FALSE(pin_of({{"nodeSelector", {{"zone", "a"}}}}).pinned);
}

TEST(ModelPin, InAllowsTheListedModelsThatArePresent) {
  const Json spec = {
      {"affinity", affinity({term({expression(kLabel, "In", {"V100", "H100", "A100"})})})}};
  EXPECT_EQ(allowed(spec, kFleet), (Models{"A100", "V100"}));
  // Nodes without the label never satisfy In.
  EXPECT_EQ(allowed(spec, kFleetWithUnlabelled), (Models{"A100", "V100"}));
}

TEST(ModelPin, NotInIsRelativeToTheModelsPresentAndTakesUnlabelledNodes) {
  const Json spec = {{"affinity", affinity({term({expression(kLabel, "NotIn", {"T4"})})})}};
  EXPECT_EQ(allowed(spec, kFleet), (Models{"A100", "V100"}));
  EXPECT_EQ(allowed(spec, kFleetWithUnlabelled), (Models{"", "A100", "V100"}));
  // Excluding a model the cluster does not have allows everything: unpinned here.
  const Json absent = {{"affinity", affinity({term({expression(kLabel, "NotIn", {"H100"})})})}};
  EXPECT_TRUE(allowed(absent, kFleet).empty());
}

TEST(ModelPin, ExistsAndDoesNotExistSplitLabelledFromUnlabelledNodes) {
  const Json exists = {{"affinity", affinity({term({expression(kLabel, "Exists")})})}};
  EXPECT_TRUE(allowed(exists, kFleet).empty()) << "every present model is labelled";
  EXPECT_EQ(allowed(exists, kFleetWithUnlabelled), kFleet);
  const Json missing = {{"affinity", affinity({term({expression(kLabel, "DoesNotExist")})})}};
  EXPECT_EQ(allowed(missing, kFleetWithUnlabelled), Models{""});
  EXPECT_EQ(allowed(missing, kFleet), Models{kNone});
}

TEST(ModelPin, GtAndLtCompareIntegers) {
  const Models numeric = {"10", "20", "x"};
  const Json gt = {{"affinity", affinity({term({expression(kLabel, "Gt", {"15"})})})}};
  EXPECT_EQ(allowed(gt, numeric), Models{"20"});
  const Json lt = {{"affinity", affinity({term({expression(kLabel, "Lt", {"15"})})})}};
  EXPECT_EQ(allowed(lt, numeric), Models{"10"});
  // Not one integer value: the term cannot be parsed and matches nothing.
  const Json bad = {{"affinity", affinity({term({expression(kLabel, "Gt", {"1", "2"})})})}};
  EXPECT_EQ(allowed(bad, numeric), Models{kNone});
}

TEST(ModelPin, TermsAreOredAndExpressionsWithinATermAnded) {
  const Json spec = {{"affinity", affinity({
                                      term({expression(kLabel, "In", {"A100", "V100"}),
                                            expression(kLabel, "NotIn", {"V100"})}),
                                      term({expression(kLabel, "In", {"T4"})}),
                                  })}};
  EXPECT_EQ(allowed(spec, kFleet), (Models{"A100", "T4"}));
  EXPECT_EQ(pin_of(spec).describe(), "in (A100,V100), notin (V100) or in (T4)");
}

TEST(ModelPin, ExpressionsOnOtherLabelsLeaveTheirTermFreeOnTheModel) {
  // The second term allows any model as far as this label is concerned: so does the pod.
  const Json spec = {{"affinity", affinity({term({expression(kLabel, "In", {"A100"})}),
                                            term({expression("zone", "In", {"a"})})})}};
  EXPECT_FALSE(pin_of(spec).pinned);
  // Within a term, another label's expression does not widen the model's.
  const Json anded = {
      {"affinity",
       affinity({term({expression("zone", "In", {"a"}), expression(kLabel, "In", {"A100"})})})}};
  EXPECT_EQ(allowed(anded, kFleet), Models{"A100"});
}

TEST(ModelPin, MatchFieldsAreIgnored) {
  Json fields_only = {{"matchFields", Json::array({expression("metadata.name", "In", {"n1"})})}};
  EXPECT_FALSE(pin_of({{"affinity", affinity({fields_only})}}).pinned);
  Json both = term({expression(kLabel, "In", {"T4"})});
  both["matchFields"] = Json::array({expression("metadata.name", "In", {"n1"})});
  EXPECT_EQ(allowed({{"affinity", affinity({both})}}, kFleet), Models{"T4"});
}

TEST(ModelPin, EmptyTermsMatchNoNode) {
  // As kube-scheduler: an empty term matches nothing; with no other term, neither does the pod.
  EXPECT_EQ(allowed({{"affinity", affinity({Json::object()})}}, kFleet), Models{kNone});
  EXPECT_EQ(
      allowed({{"affinity", affinity({Json::object(), term({expression(kLabel, "In", {"T4"})})})}},
              kFleet),
      Models{"T4"});
  EXPECT_EQ(allowed({{"affinity", affinity({})}}, kFleet), Models{kNone});
  EXPECT_EQ(pin_of({{"affinity", affinity({})}}).describe(), "matches no node");
}

TEST(ModelPin, NodeSelectorAndAffinityMustBothHold) {
  Json spec = {{"nodeSelector", {{"nvidia.com/gpu.product", "V100"}}},
               {"affinity", affinity({term({expression(kLabel, "In", {"A100", "V100"})}),
                                      term({expression(kLabel, "In", {"T4"})})})}};
  EXPECT_EQ(allowed(spec, kFleet), Models{"V100"});
  spec["nodeSelector"]["nvidia.com/gpu.product"] = "H100";
  EXPECT_EQ(allowed(spec, kFleet), Models{kNone});
  // A selector with an affinity free on the model: the selector alone.
  Json free = {{"nodeSelector", {{"nvidia.com/gpu.product", "T4"}}},
               {"affinity", affinity({term({expression("zone", "Exists")})})}};
  EXPECT_EQ(allowed(free, kFleet), Models{"T4"});
}

TEST(ModelPin, APinAllowingEveryModelPresentIsUnpinnedThere) {
  const Json spec = {
      {"affinity", affinity({term({expression(kLabel, "In", {"A100", "T4", "V100"})})})}};
  EXPECT_TRUE(allowed(spec, kFleet).empty());
  EXPECT_EQ(allowed(spec, kFleetWithUnlabelled), kFleet);
}

TEST(ModelPin, TheLabelIsConfigurable) {
  kube::ResourceNames names;
  names.gpu_model_label = "example.com/accelerator";
  const Json spec = {
      {"nodeSelector", {{"example.com/accelerator", "T4"}, {"nvidia.com/gpu.product", "A100"}}}};
  EXPECT_EQ(core::resolve_models(pin_of(spec, names), kFleet), Models{"T4"});
  const Json node = {
      {"metadata", {{"name", "n"}, {"labels", {{"example.com/accelerator", "T4"}}}}}};
  EXPECT_EQ(kube::parse_node(node, names).gpu_model, "T4");
  EXPECT_EQ(kube::parse_node(node, kube::ResourceNames{}).gpu_model, "");
}

TEST(ModelPin, MalformedPinsNeverMakeThePodUnreadable) {
  const std::vector<Json> specs = {
      {{"affinity", "yes"}},
      {{"affinity", {{"nodeAffinity", Json::array()}}}},
      {{"affinity", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", 3}}}}}},
      {{"nodeSelector", "gpu"}},
      {{"affinity", affinity({"term"})}},
      {{"affinity", affinity({term({"expression"})})}},
      {{"affinity", affinity({term({expression(kLabel, "In", {1, 2})})})}},
      {{"affinity", affinity({term({expression(kLabel, "In", "A100")})})}},
      {{"affinity", affinity({term({{{"key", 7}, {"operator", "In"}, {"values", {"A100"}}}})})}},
  };
  for (const Json& spec : specs) {
    EXPECT_NO_THROW(pin_of(spec)) << spec.dump();
  }
  // Values that are not strings, or no list: the term cannot be parsed and matches nothing.
  EXPECT_EQ(allowed(specs[6], kFleet), Models{kNone});
  EXPECT_EQ(allowed(specs[7], kFleet), Models{kNone});
  // A non-string selector value: the API server would not have stored it; it matches nothing.
  EXPECT_EQ(allowed({{"nodeSelector", {{"nvidia.com/gpu.product", 100}}}}, kFleet), Models{kNone});
  // Operators are case-sensitive, and unknown ones fail their term.
  EXPECT_EQ(allowed({{"affinity", affinity({term({expression(kLabel, "in", {"A100"})})})}}, kFleet),
            Models{kNone});
  // Values where none belong, none where some must.
  EXPECT_EQ(
      allowed({{"affinity", affinity({term({expression(kLabel, "Exists", {"A100"})})})}}, kFleet),
      Models{kNone});
  EXPECT_EQ(
      allowed({{"affinity", affinity({term({expression(kLabel, "In", Json::array())})})}}, kFleet),
      Models{kNone});
}

TEST(ModelPin, HugePinsAreBoundedAndReadAsUnpinned) {
  Json values = Json::array();
  for (std::size_t i = 0; i <= core::kMaxPinValues; ++i) values.push_back("M" + std::to_string(i));
  ModelPin pin = pin_of({{"affinity", affinity({term({expression(kLabel, "In", values)})})}});
  EXPECT_FALSE(pin.pinned);
  EXPECT_TRUE(pin.unreadable);
  EXPECT_TRUE(pin.terms.empty());
  EXPECT_NE(pin.describe(), "");

  std::vector<Json> terms(core::kMaxPinTerms + 1, term({expression(kLabel, "In", {"A100"})}));
  EXPECT_TRUE(pin_of({{"affinity", affinity(terms)}}).unreadable);
  terms.resize(core::kMaxPinTerms);
  EXPECT_EQ(allowed({{"affinity", affinity(terms)}}, kFleet), Models{"A100"});

  const std::string long_value(core::kMaxPinValueLength + 1, 'x');
  EXPECT_TRUE(pin_of({{"nodeSelector", {{"nvidia.com/gpu.product", long_value}}}}).unreadable);
  // Expressions on other labels cost nothing against the bound.
  std::vector<Json> others(2 * core::kMaxPinValues, expression("zone", "Exists"));
  others.push_back(expression(kLabel, "In", {"T4"}));
  EXPECT_EQ(allowed({{"affinity", affinity({term(others)})}}, kFleet), Models{"T4"});
}

TEST(ModelPin, TheDemandCarriesThePinResolvedInTheCluster) {
  kube::PodInfo pod =
      kube::parse_pod(pod_with_spec({{"nodeSelector", {{"nvidia.com/gpu.product", "T4"}}}}), {});
  EXPECT_EQ(pod.demand(kFleet).allowed_models, Models{"T4"});
  EXPECT_TRUE(pod.demand().allowed_models.empty()) << "unresolved: no cluster to resolve against";
  // Models given as such (the simulator) are used while there is no pin.
  kube::PodInfo given;
  given.allowed_models = {"V100"};
  EXPECT_EQ(given.demand(kFleet).allowed_models, Models{"V100"});
  // The pod's allocation keeps the pin, for /inspect.
  pod.node_name = "n1";
  EXPECT_EQ(kube::allocation_of(pod)->model_pin, pod.model_pin);
}

TEST(ModelPin, AnyOfIsInAndMatchesLikeTheDecodedPin) {
  const Models models = {"V100M16", "V100M32"};
  const ModelPin built = ModelPin::any_of(models);
  const ModelPin decoded =
      pin_of({{"affinity", affinity({term({expression(kLabel, "In", {"V100M16", "V100M32"})})})}});
  EXPECT_EQ(built, decoded);
  EXPECT_TRUE(built.allows(std::string_view("V100M32")));
  EXPECT_FALSE(built.allows(std::string_view("P100")));
  EXPECT_FALSE(built.allows(std::nullopt));
  EXPECT_FALSE(ModelPin::any_of({}).pinned);
}

TEST(ClusterModelGpuModels, FollowsTheGpuNodesAsTheyComeAndGo) {
  core::ClusterModel model;
  auto node = [](std::string name, std::string gpu_model, int gpus) {
    core::NodeSpec spec;
    spec.name = std::move(name);
    spec.gpu_model = std::move(gpu_model);
    spec.gpu_count = gpus;
    spec.memory_per_gpu = gpus > 0 ? 16 : 0;
    return spec;
  };
  model.upsert_node(node("a", "T4", 2));
  model.upsert_node(node("b", "A100", 8));
  model.upsert_node(node("cpu", "", 0));  // no GPUs: not a model pods can be pinned to
  EXPECT_EQ(model.gpu_models(), (Models{"A100", "T4"}));
  model.upsert_node(node("c", "", 1));
  EXPECT_EQ(model.gpu_models(), (Models{"", "A100", "T4"}));
  model.upsert_node(node("a", "V100", 2));  // relabelled
  EXPECT_EQ(model.gpu_models(), (Models{"", "A100", "V100"}));
  model.upsert_node(node("d", "V100", 2));
  model.remove_node("a");
  EXPECT_EQ(model.gpu_models(), (Models{"", "A100", "V100"}));
  EXPECT_EQ(model.gpu_nodes_by_model().at("V100"), 1u);
  model.remove_node("d");
  model.upsert_node(node("c", "", 0));  // lost its GPUs
  EXPECT_EQ(model.gpu_models(), Models{"A100"});
}

TEST(LabelKey, AcceptsWhatTheApiServerAccepts) {
  for (std::string_view key :
       {"nvidia.com/gpu.product", "gpu", "a.b-c/X_y.z", "node.kubernetes.io/instance-type"}) {
    EXPECT_TRUE(kube::is_label_key(key)) << key;
  }
  for (std::string_view key : {"", "/gpu", "nvidia.com/", "Nvidia.com/gpu", "a/b/c", "-gpu", "gpu-",
                               "nvidia..com/gpu", "gpu product"}) {
    EXPECT_FALSE(kube::is_label_key(key)) << key;
  }
  EXPECT_FALSE(kube::is_label_key(std::string(64, 'a')));
}

}  // namespace
}  // namespace gpushare
