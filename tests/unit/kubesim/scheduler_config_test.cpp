// Reading KubeSchedulerConfiguration files: the shipped ones, each API version's plugin syntax,
// and typos that must not pass silently.

#include "gpushare/kubesim/scheduler_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpushare::kubesim {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::filesystem::path kSource = GPUSHARE_SOURCE_DIR;

TEST(SchedulerConfig, DefaultsPerVersion) {
  const SchedulerProfile now = default_profile(KubeVersion::kCurrent);
  ASSERT_EQ(now.scorers.size(), 2u);
  EXPECT_EQ(now.scorers[0].plugin, "NodeResourcesFit");
  EXPECT_EQ(now.scorers[0].strategy, ScoringStrategy::kLeastAllocated);
  EXPECT_EQ(now.scorers[1].kind, ResourceScorer::Kind::kBalancedAllocation);
  const SchedulerProfile old = default_profile(KubeVersion::k1_20);
  ASSERT_EQ(old.scorers.size(), 2u);
  EXPECT_EQ(old.scorers[0].kind, ResourceScorer::Kind::kBalancedAllocation);
  EXPECT_EQ(old.scorers[1].plugin, "NodeResourcesLeastAllocated");
}

TEST(SchedulerConfig, EveryShippedConfigurationParses) {
  for (const char* file : {"deploy/scheduler/kube-scheduler-config.yaml",
                           "deploy/scheduler/kube-scheduler-config-v1beta3.yaml",
                           "deploy/scheduler/kube-scheduler-config-v1beta2.yaml",
                           "deploy/overlays/second-scheduler/gpushare-scheduler-config.yaml"}) {
    SCOPED_TRACE(file);
    const SchedulerConfig config =
        parse_scheduler_config(read(kSource / file), KubeVersion::kCurrent);
    ASSERT_FALSE(config.extenders.empty());
    int binders = 0;
    for (const ExtenderConfig& extender : config.extenders) {
      EXPECT_NE(extender.url_prefix.find("/gpushare-scheduler"), std::string::npos);
      if (!extender.bind_verb.empty()) {
        ++binders;
        // The binding entry takes GPU pods only and must never be skipped.
        ASSERT_EQ(extender.managed_resources.size(), 1u);
        EXPECT_EQ(extender.managed_resources[0].name, "aliyun.com/gpu-mem");
        EXPECT_FALSE(extender.ignorable);
        EXPECT_EQ(extender.filter_verb, "filter");
      }
    }
    EXPECT_EQ(binders, 1);
  }
}

TEST(SchedulerConfig, FitScoringStrategyAndShape) {
  const SchedulerConfig config = parse_scheduler_config(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 70
profiles:
- schedulerName: packer
  percentageOfNodesToScore: 100
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
      enabled:
      - name: NodeResourcesFit
        weight: 5
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - name: aliyun.com/gpu-mem
          weight: 3
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 100
            score: 10
)",
                                                        KubeVersion::kCurrent);
  EXPECT_EQ(config.percentage_of_nodes_to_score, 70);
  const SchedulerProfile* packer = config.profile("packer");
  ASSERT_NE(packer, nullptr);
  EXPECT_EQ(config.percentage_for(*packer), 100);
  ASSERT_EQ(packer->scorers.size(), 1u);
  const ResourceScorer& fit = packer->scorers[0];
  EXPECT_EQ(fit.weight, 5);
  EXPECT_EQ(fit.strategy, ScoringStrategy::kRequestedToCapacityRatio);
  EXPECT_EQ(fit.resources, (std::vector<ResourceWeight>{{"aliyun.com/gpu-mem", 3}}));
  EXPECT_EQ(fit.shape, (std::vector<ShapePoint>{{0, 0}, {100, 10}}));
  EXPECT_EQ(config.profile("default-scheduler"), nullptr);
}

TEST(SchedulerConfig, DisableEverythingThenEnable) {
  const SchedulerConfig config = parse_scheduler_config(R"(
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: RequestedToCapacityRatio
        weight: 5
  pluginConfig:
  - name: RequestedToCapacityRatio
    args:
      shape:
      - utilization: 0
        score: 0
      - utilization: 100
        score: 10
      resources:
      - name: aliyun.com/gpu-mem
        weight: 1
)",
                                                        KubeVersion::k1_20);
  const SchedulerProfile& profile = config.profiles.at(0);
  ASSERT_EQ(profile.scorers.size(), 1u);
  EXPECT_TRUE(profile.constant_plugins.empty());
  EXPECT_EQ(profile.scorers[0].strategy, ScoringStrategy::kRequestedToCapacityRatio);
  EXPECT_EQ(profile.scorers[0].weight, 5);
}

TEST(SchedulerConfig, TyposAreErrorsNamingTheField) {
  const auto error_of = [](std::string_view yaml) -> std::string {
    try {
      parse_scheduler_config(yaml, KubeVersion::kCurrent);
    } catch (const ConfigError& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://x/gpushare-scheduler
  filterVerb: filter
  managedResource:
  - name: aliyun.com/gpu-mem
)")
                .find("extenders[0]: unknown field \"managedResource\""),
            std::string::npos);
  EXPECT_NE(error_of(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://x/gpushare-scheduler
  prioritizeVerb: prioritize
)")
                .find("weight must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAlocated
)")
                .find("unknown strategy \"MostAlocated\""),
            std::string::npos);
  EXPECT_NE(error_of("apiVersion: v1\nkind: ConfigMap\n").find("apiVersion"), std::string::npos);
  EXPECT_NE(error_of(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      enabled:
      - name: SomeOutOfTreeScorer
)")
                .find("not modelled"),
            std::string::npos);
}

TEST(ExtenderConfig, InterestFollowsManagedResources) {
  ExtenderConfig all;
  ExtenderConfig gpu;
  gpu.managed_resources.push_back({"aliyun.com/gpu-mem", false});
  const std::vector<std::string> cpu_pod{"cpu", "memory"};
  const std::vector<std::string> gpu_pod{"cpu", "memory", "aliyun.com/gpu-mem"};
  EXPECT_TRUE(all.interested_in(cpu_pod));
  EXPECT_FALSE(gpu.interested_in(cpu_pod));
  EXPECT_TRUE(gpu.interested_in(gpu_pod));
}

}  // namespace
}  // namespace gpushare::kubesim
