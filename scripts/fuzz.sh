#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang into build-fuzz/ and runs each for a bounded
# time, starting from the seeds in fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh [seconds-per-target] [target...]      (default: 30 s each, every target)
#
# Inputs the fuzzer finds interesting go to build-fuzz/corpus/<target>/ (the checked-in seeds are
# only read); a crash, leak or time-out writes the input to build-fuzz/findings/<target>/ and
# makes the script fail after the other targets ran. Reproduce one with
#   build-fuzz/fuzz/<target> build-fuzz/findings/<target>/crash-...
# Needs clang and libFuzzer's runtime (Debian 12: clang libclang-rt-dev), installed if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-${GPUSHARE_FUZZ_SECONDS:-30}}"
shift || true
build_dir="${GPUSHARE_FUZZ_BUILD_DIR:-build-fuzz}"
jobs="${GPUSHARE_JOBS:-$(nproc)}"
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(extender_args_fuzzer binding_args_fuzzer preemption_args_fuzzer quantity_fuzzer watch_framer_fuzzer)
fi

scripts/install-deps.sh
# clang and libFuzzer's runtime are needed only here, so they are installed here rather than by
# install-deps.sh (which every build runs).
if [[ -z "${GPUSHARE_FUZZ_CXX:-}" ]] && { ! command -v clang++ >/dev/null ||
    ! compgen -G '/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a' >/dev/null; }; then
  scripts/apt-install-missing.sh "for fuzzing" clang libclang-rt-dev
fi
clang="${GPUSHARE_FUZZ_CXX:-$(command -v clang++ || true)}"
if [[ -z "$clang" ]]; then
  echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-dev)" >&2
  exit 2
fi
# $GPUSHARE_DEBUG_INFO as in scripts/test.sh (lines in .ci/run: a finding's stack still has
# file:line).
CXX="$clang" cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUSHARE_FUZZ=ON \
  -DGPUSHARE_WERROR=OFF -DGPUSHARE_BUILD_TESTS=OFF -DGPUSHARE_BUILD_BENCH=OFF \
  ${GPUSHARE_DEBUG_INFO:+"-DGPUSHARE_DEBUG_INFO=$GPUSHARE_DEBUG_INFO"} >/dev/null
started=$SECONDS
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
echo "== fuzzers built in $((SECONDS - started)) s" >&2

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
summary=()
for target in "${targets[@]}"; do
  corpus="$build_dir/corpus/$target"
  findings="$build_dir/findings/$target"
  mkdir -p "$corpus" "$findings"
  log="$build_dir/fuzz-$target.log"
  echo "== $target: ${seconds}s" >&2
  dict="fuzz/${target%_fuzzer}.dict"
  [[ -f "$dict" ]] || dict=fuzz/json.dict
  status=0
  "$build_dir/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$findings/" \
    "$corpus" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  units=$(ls "$corpus" | wc -l)
  if ((status != 0)); then
    failed+=("$target")
    summary+=("$target: FAILED after ${runs:-?} executions (see $log and $findings/)")
    grep -E 'FINDING|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' "$log" | head -5 >&2 || true
  else
    summary+=("$target: ${runs:-?} executions, no findings, corpus $units inputs")
  fi
done
printf '%s\n' "${summary[@]}"
if ((${#failed[@]} > 0)); then
  echo "fuzz.sh: findings in ${failed[*]}" >&2
  exit 1
fi
