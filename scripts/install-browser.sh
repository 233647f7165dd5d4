#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian 12 packages chromium and chromium-driver)
# for the web view's browser tests (tests/browser). Optional: without them those tests skip.
# Idempotent: a machine that has both pays nothing.
set -euo pipefail

packages=(chromium chromium-driver fonts-dejavu-core)
missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "gpushare: installing Debian packages for the browser tests: ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
