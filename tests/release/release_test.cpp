// What a release promises around the binaries: one version everywhere (CMakeLists.txt, every
// binary's --version, CHANGELOG.md's newest entry, the image tag deploy/ uses), and the image
// recipe agreeing with the manifests. The image itself is built and run by .ci/run
// (scripts/build-image.sh --check).

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = GPUSHARE_SOURCE_DIR;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string first_match(const std::string& text, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(text, match, std::regex(pattern))) return {};
  return match[1];
}

// Runs a command; its standard output.
std::string output_of(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  EXPECT_EQ(::pclose(pipe.release()), 0) << command;
  return out;
}

std::string cmake_version() {
  return first_match(read(kRoot / "CMakeLists.txt"), R"(project\(gpushare VERSION ([0-9.]+))");
}

TEST(Release, TheChangelogsNewestEntryIsTheProjectVersion) {
  const std::string changelog = read(kRoot / "CHANGELOG.md");
  // The first "## [X.Y.Z]" heading is the newest.
  const std::string newest = first_match(changelog, R"(\n## \[([^\]]+)\])");
  ASSERT_FALSE(newest.empty()) << "no version heading in CHANGELOG.md";
  EXPECT_EQ(newest, cmake_version());
}

TEST(Release, EveryBinaryPrintsTheChangelogsNewestVersion) {
  const std::string newest = first_match(read(kRoot / "CHANGELOG.md"), R"(\n## \[([^\]]+)\])");
  ASSERT_FALSE(newest.empty());
  for (const char* binary : {
           GPUSHARE_EXTENDER_BINARY,
           GPUSHARE_INSPECT_BINARY,
           GPUSHARE_SIM_BINARY,
#ifdef GPUSHARE_DEVICE_PLUGIN_BINARY
           GPUSHARE_DEVICE_PLUGIN_BINARY,
#endif
       }) {
    SCOPED_TRACE(binary);
    const std::string printed = output_of(std::string("'") + binary + "' --version");
    // "gpushare 0.2.0 (1a2b3c4)\n", or without the commit outside git.
    EXPECT_TRUE(std::regex_match(
        printed, std::regex("gpushare " + std::regex_replace(newest, std::regex(R"(\.)"), R"(\.)") +
                            R"(( \([0-9a-f]+\))?\n)")))
        << printed;
  }
}

TEST(Release, TheManifestsPointAtTheImageTheScriptBuilds) {
  const std::string script = read(kRoot / "scripts" / "build-image.sh");
  ASSERT_NE(script.find(R"(tag="${tag:-localhost/gpushare-extender:$version}")"),
            std::string::npos);
  const std::string kustomization = read(kRoot / "deploy" / "base" / "kustomization.yaml");
  EXPECT_EQ(first_match(kustomization, R"(newName: (\S+))"), "localhost/gpushare-extender");
  EXPECT_EQ(first_match(kustomization, R"(newTag: \"([^\"]+)\")"), cmake_version());
}

// The device plugin's DaemonSet runs the product image (the same tag as the extender's) by the
// path the image recipe installs the binary at; both recipes and the script ship it.
TEST(Release, TheImageCarriesTheDevicePluginTheDaemonSetRuns) {
  const std::string kustomization = read(kRoot / "deploy" / "device-plugin" / "kustomization.yaml");
  EXPECT_EQ(first_match(kustomization, R"(- name: (\S+))"), "gpushare-extender");
  EXPECT_EQ(first_match(kustomization, R"(newName: (\S+))"), "localhost/gpushare-extender");
  EXPECT_EQ(first_match(kustomization, R"(newTag: \"([^\"]+)\")"), cmake_version());
  const std::string daemonset = read(kRoot / "deploy" / "device-plugin" / "daemonset.yaml");
  EXPECT_EQ(first_match(daemonset, R"(\n +image: (\S+))"), "gpushare-extender");
  EXPECT_EQ(first_match(daemonset, R"(command: \[\"([^\"]+)\"\])"),
            "/usr/local/bin/gpushare-device-plugin");

  const std::string containerfile = read(kRoot / "Containerfile");
  const std::string copy = first_match(containerfile, R"(\nCOPY (bin/[^\n]*) /usr/local/bin/)");
  EXPECT_NE(copy.find("bin/gpushare-device-plugin"), std::string::npos) << copy;
  EXPECT_NE(first_match(read(kRoot / "scripts" / "build-image.sh"), R"(\nbinaries=\(([^)]*)\))")
                .find("gpushare-device-plugin"),
            std::string::npos);
  const std::string dockerfile = read(kRoot / "Dockerfile");
  EXPECT_NE(dockerfile.find("--target gpushare-extender gpushare-device-plugin"),
            std::string::npos);
  EXPECT_NE(
      dockerfile.find("COPY --from=build /build/gpushare-extender /build/gpushare-device-plugin"),
      std::string::npos);
}

TEST(Release, TheImageRunsAsTheUserTheDeploymentExpects) {
  const std::string containerfile = read(kRoot / "Containerfile");
  EXPECT_EQ(first_match(containerfile, R"(\nUSER (\S+))"), "65532:65532");
  EXPECT_EQ(first_match(containerfile, R"(\nEXPOSE (\d+))"), "39999");
  EXPECT_NE(containerfile.find(R"(ENTRYPOINT ["/usr/local/bin/gpushare-extender"])"),
            std::string::npos);
  const std::string deployment = read(kRoot / "deploy" / "base" / "deployment.yaml");
  EXPECT_EQ(first_match(deployment, R"(runAsUser: (\d+))"), "65532");
  EXPECT_EQ(first_match(deployment, R"(runAsGroup: (\d+))"), "65532");
  EXPECT_EQ(first_match(deployment, R"(containerPort: (\d+))"), "39999");
  // The user has a passwd entry in the image (build-image.sh writes it).
  EXPECT_NE(read(kRoot / "scripts" / "build-image.sh").find("gpushare:x:65532:65532:"),
            std::string::npos);
}

TEST(Release, LicenseAndNoticeShip) {
  const std::string license = read(kRoot / "LICENSE");
  EXPECT_NE(license.find("Apache License"), std::string::npos);
  EXPECT_NE(license.find("Version 2.0, January 2004"), std::string::npos);
  EXPECT_NE(license.find("END OF TERMS AND CONDITIONS"), std::string::npos) << "the full text";
  const std::string notice = read(kRoot / "NOTICE");
  for (const char* credit : {"gpushare-scheduler-extender", "gpushare-device-plugin",
                             "bench/data/openb", "Beware of Fragmentation"}) {
    EXPECT_NE(notice.find(credit), std::string::npos) << credit;
  }
}

}  // namespace
