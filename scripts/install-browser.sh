#!/usr/bin/env bash
# Installs headless Chromium and its WebDriver (Debian 12 packages chromium and chromium-driver)
# for the web view's browser tests (tests/browser). Optional: without them those tests skip.
# Idempotent: a machine that has both pays nothing.
set -euo pipefail

packages=(chromium chromium-driver fonts-dejavu-core)
"$(dirname "$0")/apt-install-missing.sh" "for the browser tests" "${packages[@]}"
