#!/usr/bin/env bash
# Installs those of the given Debian packages that are not installed yet, with apt (as root, or
# through sudo). Idempotent: a machine that has them all pays one dpkg-query per package.
#
#   scripts/apt-install-missing.sh PURPOSE PACKAGE...
set -euo pipefail
purpose="$1"
shift
missing=()
for package in "$@"; do
  [[ -z "$package" ]] && continue
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "gpushare: installing Debian packages ${purpose}: ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
