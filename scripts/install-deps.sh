#!/usr/bin/env bash
# Installs the Debian 12 packages gpushare needs to build and test. Idempotent: only missing
# packages are installed, so a prepared machine pays nothing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates
  libcpp-httplib-dev nlohmann-json3-dev libcurl4-openssl-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libcli11-dev libssl-dev zlib1g-dev libbrotli-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)

missing=()
for package in "${packages[@]}"; do
  [[ -z "$package" ]] && continue
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "gpushare: installing Debian packages: ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
