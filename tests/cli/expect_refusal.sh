#!/bin/sh
# Runs COMMAND...; passes if it exits 1 (no crash, no serving) and its output contains every
# line of EXPECTED_FILE (fixed strings). Usage: expect_refusal.sh EXPECTED_FILE COMMAND...
expected=$1
shift
out=$(timeout 20 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
  echo "expect_refusal: exit code $rc, want 1" >&2
  exit 1
fi
while IFS= read -r line; do
  case $line in '#'*|'') continue ;; esac
  if ! printf '%s\n' "$out" | grep -qF -- "$line"; then
    echo "expect_refusal: missing from the output: $line" >&2
    exit 1
  fi
done < "$expected"
