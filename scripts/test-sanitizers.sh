#!/usr/bin/env bash
# Builds the unit suites (core and kube, API client, extender, fake API server) and the contract
# and integration suites with AddressSanitizer+UndefinedBehaviorSanitizer (build-asan/), and all
# but the single-threaded core and kube unit tests with ThreadSanitizer (build-tsan/), and runs
# them. Any report fails the run.
#
#   scripts/test-sanitizers.sh [asan] [tsan]        (default: both)
#
# Optimisation: ASan+UBSan at -Og, TSan at -O1. UBSan's instrumentation is costly to optimise at
# -O1 and cheap at -Og, which still inlines enough for the suites to run quickly; TSan costs the
# compiler no more at -O1 than at -O0. -g1 keeps the line tables the reports are symbolised
# with (function and file:line of each frame; an inlined frame may show as its caller) and drops
# the variables' debug information, which only a debugger reads. Rebuild a directory with -g to
# debug a report. Not -Werror: GCC warns that sanitizer instrumentation causes false flow
# warnings (GCC 12 -Wmaybe-uninitialized in <regex> with ASan); warnings are the normal build's
# job (scripts/test.sh builds with -Werror). Suppressions (third-party false positives only, each
# explained) are in scripts/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs="${GPUSHARE_JOBS:-$(nproc)}"
kinds=("$@")
if ((${#kinds[@]} == 0)); then
  kinds=(asan tsan)
fi
threaded=(gpushare_contract_tests gpushare_integration_tests gpushare_apiclient_tests
  gpushare_extender_unit_tests gpushare_fakeapi_tests)
# The unit tests and the code they cover (src/core, src/kube) start no thread, so TSan could
# report nothing there: it runs them only once they do (about 17 files less to build with TSan).
unit_threads() {
  grep -rqE 'std::(j?thread|async)|pthread_create' src/core src/kube tests/unit/core tests/unit/kube tests/unit/json
}
supp="$PWD/scripts/sanitizers"

for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) sanitize="address,undefined" optimize="-Og" targets=(gpushare_unit_tests "${threaded[@]}") ;;
    tsan)
      sanitize="thread" optimize="-O1" targets=("${threaded[@]}")
      if unit_threads; then targets+=(gpushare_unit_tests); fi
      ;;
    *) echo "test-sanitizers.sh: unknown kind $kind (asan or tsan)" >&2; exit 2 ;;
  esac
  dir="build-$kind"
  echo "== $kind: building ${targets[*]} in $dir" >&2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimize -g1" \
    -DGPUSHARE_SANITIZE="$sanitize" -DGPUSHARE_WERROR=OFF -DGPUSHARE_BUILD_TESTS=ON -DGPUSHARE_BUILD_BENCH=OFF >/dev/null
  started=$SECONDS
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
  echo "== $kind: built in $((SECONDS - started)) s; running the tests" >&2
  started=$SECONDS
  (
    cd "$dir"
    export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$supp/tsan.supp"
    # Only the suites built here (the others' discovery stubs are named *_NOT_BUILT), and not the
    # tests that run binaries this script does not build (the extender's refusal of a faulty
    # cluster file).
    ctest --output-on-failure -j "$jobs" --timeout 900 -E '_NOT_BUILT$|^extender_refuses_a_faulty_cluster_file$'
  )
  echo "== $kind: tests ran in $((SECONDS - started)) s" >&2
done
