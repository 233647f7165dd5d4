#!/usr/bin/env bash
# Installs the Debian 12 packages gpushare needs to build and test. Idempotent: only missing
# packages are installed, so a prepared machine pays nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  libcpp-httplib-dev nlohmann-json3-dev libsimdjson-dev libcurl4-openssl-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libcli11-dev libssl-dev zlib1g-dev libbrotli-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler  # gpushare-device-plugin
  curl python3  # the README's commands and the test that runs them (tests/docs)
  clang-format  # scripts/check-format.sh, run by scripts/test.sh
  ccache  # rebuilds of unchanged files (CMakeLists.txt, GPUSHARE_CCACHE)
)

"$(dirname "$0")/apt-install-missing.sh" "to build and test" "${packages[@]}"
