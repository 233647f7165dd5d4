#!/usr/bin/env bash
# Fails, listing them, when C++ files under src/ include/ tests/ bench/ fuzz/ differ from what
# clang-format makes of them with .clang-format (clang-format 14, Debian 12's). Fix one with
# `clang-format -i FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "gpushare: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
unformatted=()
while IFS= read -r -d '' file; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done < <(find src include tests bench fuzz -type f \( -name '*.cpp' -o -name '*.h' \) -print0 | sort -z)
if ((${#unformatted[@]})); then
  echo "gpushare: ${#unformatted[@]} file(s) not formatted as .clang-format says (clang-format -i FILE):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
