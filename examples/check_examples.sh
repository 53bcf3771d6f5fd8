#!/usr/bin/env bash
# examples/check_examples.sh [BUILD_DIR]: headlab as an outside project sees it, run by .ci/run.
#
#  1. `cmake --install BUILD_DIR` (default build/release, already built) into a fresh temporary
#     prefix: every public header, every library and the CMake package land there, and the package
#     files name no path of this checkout or its build;
#  2. a tiny copy-task checkpoint from the built CLI (for examples/read_checkpoint);
#  3. every examples/<name>/ configured with -DCMAKE_PREFIX_PATH=<prefix> and -Wall -Wextra -Werror,
#     built, and run (each program checks its own result and exits nonzero when a check fails);
#  4. a throwaway project that does add_subdirectory(<this repo> headlab) and links headlab::headlab:
#     it configures, builds and runs a trivial main, and its build tree has no CLI, test, tutorial or
#     benchmark target (HEADLAB_BUILD_* default to OFF there) and installs none of headlab's files.
# Prints one line per check and a summary; exits 1 if any check failed. HEADLAB_KEEP_TMP=1 keeps the
# temporary directory (its path is printed) for a look afterwards.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
repo=$(pwd)
build=${1:-build/release}
cli=$build/apps/headlab
jobs=$(./scripts/build_jobs.sh) || exit 2  # HEADLAB_JOBS, or one per core
export HEADLAB_THREADS=1
start=$(date +%s)

if [ ! -x "$cli" ]; then
  echo "check_examples: $cli not found; build first (cmake --build --preset release)"
  exit 2
fi
tmp=$(mktemp -d)
if [ "${HEADLAB_KEEP_TMP:-0}" = 1 ]; then
  echo "check_examples: keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
prefix=$tmp/prefix
log=$tmp/log.txt
passed=0
failures=()

# run_step NAME COMMAND...: runs the command with its output in $log; one line "ok"/"FAIL" with its
# time; on failure the log's tail is shown.
run_step() {
  local name=$1 t0 rc ms dt
  shift
  t0=$(date +%s%N)
  "$@" > "$log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  dt=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  if [ "$rc" -eq 0 ]; then
    printf '  ok    %-58s %6s s\n' "$name" "$dt"
    passed=$((passed + 1))
  else
    printf '  FAIL  %-58s %6s s (exit %d)\n' "$name" "$dt" "$rc"
    tail -n 30 "$log" | sed 's/^/        | /'
    failures+=("$name")
  fi
  return "$rc"
}

# Every public header of the source tree has its installed copy.
headers_installed() {
  local missing=0 h rel
  while IFS= read -r h; do
    rel=${h#*/include/}
    [ -f "$prefix/include/$rel" ] || { echo "not installed: $rel"; missing=1; }
  done < <(find framework/include framework/*/include -name '*.hpp')
  for lib in core ops nn attention models optim data report train lab; do
    [ -f "$prefix/lib/libheadlab_$lib.a" ] || { echo "not installed: lib/libheadlab_$lib.a"; missing=1; }
  done
  [ -f "$prefix/lib/cmake/headlab/headlabConfig.cmake" ] || { echo "no headlabConfig.cmake"; missing=1; }
  return "$missing"
}

# The package must be relocatable: no path of this checkout, its build or the prefix baked in.
no_machine_paths() {
  local abs_build
  abs_build=$(cd "$build" && pwd)
  ! grep -rn -e "$repo" -e "$abs_build" -e "$prefix" "$prefix/lib/cmake/headlab"
}

# The add_subdirectory() consumer: trivial main, linked against headlab::headlab.
write_subdir_project() {
  mkdir -p "$tmp/subdir/src"
  cat > "$tmp/subdir/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.22)
project(headlab_subdir_consumer LANGUAGES CXX)
add_subdirectory("$repo" headlab)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE headlab::headlab)
EOF
  cat > "$tmp/subdir/src/main.cpp" <<'EOF'
#include "headlab/headlab.hpp"
int main() {
  const headlab::TensorF x = headlab::from_data<float>({1, 2, 3}, {3}, true);
  const headlab::TensorF y = headlab::sum(x * x);  // 14, dy/dx = 2x
  y.backward();
  return y.item() == 14.f && x.grad()(2) == 6.f ? 0 : 1;
}
EOF
}

# In the consumer's build tree: headlab's libraries are there, none of its programs, and every
# HEADLAB_BUILD_* is OFF in the cache.
subdir_has_no_programs() {
  local targets bad=0 opt
  targets=$(cmake --build "$tmp/subdir/build" --target help)
  grep -q 'headlab_core' <<< "$targets" || { echo "no headlab_core target"; bad=1; }
  if grep -E 'headlab_cli|headlab_tests|tutorial_|bench_|headlab_fuzzers' <<< "$targets"; then
    echo "^ targets that must not exist under add_subdirectory"
    bad=1
  fi
  for opt in CLI TESTS TUTORIALS BENCH; do
    grep -q "^HEADLAB_BUILD_$opt:BOOL=OFF" "$tmp/subdir/build/CMakeCache.txt" || { echo "HEADLAB_BUILD_$opt is not OFF"; bad=1; }
  done
  if [ -e "$tmp/subdir/build/headlab/apps" ] || [ -e "$tmp/subdir/build/headlab/tests" ]; then
    echo "apps/ or tests/ were configured"
    bad=1
  fi
  return "$bad"
}

# The consumer's install gets none of headlab's headers, libraries or package.
subdir_installs_nothing() {
  cmake --install "$tmp/subdir/build" --prefix "$tmp/subdir/inst" || return 1
  if [ -e "$tmp/subdir/inst" ] && [ -n "$(find "$tmp/subdir/inst" -path '*headlab*')" ]; then
    find "$tmp/subdir/inst" -path '*headlab*'
    return 1
  fi
}

echo "== 1. install $build into a temporary prefix"
run_step "cmake --install $build" cmake --install "$build" --prefix "$prefix"
run_step "headers, libraries and package installed" headers_installed
run_step "package files name no machine path" no_machine_paths

echo "== 2. a tiny checkpoint from the CLI"
checkpoint=$tmp/run/checkpoint.safetensors
run_step "headlab train --task copy (5 steps)" \
  "$cli" train --task copy --d-model 16 --heads 2 --ff 32 --layers 1 --steps 5 --batch 4 --eval-every 5 \
  --eval-sequences 4 --progress none --run-dir "$tmp/run"

echo "== 3. examples/ against the prefix (-Wall -Wextra -Werror)"
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/CMakeLists.txt" ] || continue
  ex_build=$tmp/examples/$name
  args=()
  [ "$name" = read_checkpoint ] && args=("$checkpoint")
  run_step "$name: configure" cmake -S "$dir" -B "$ex_build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror" &&
    run_step "$name: build" cmake --build "$ex_build" -j "$jobs" &&
    run_step "$name: run" "$ex_build/$name" "${args[@]}"
done

echo "== 4. add_subdirectory(<repo> headlab) from a throwaway project"
write_subdir_project
# This step checks the CMake wiring, not speed, but builds every library once more: at -O0 without
# debug information, with precompiled headers unless a compiler launcher (ccache) is set in the
# environment (their path in the temporary build tree would defeat its cache on every later run).
pch_off=()
[ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ] || pch_off=(-DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON)
run_step "configure" cmake -S "$tmp/subdir/src" -B "$tmp/subdir/build" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 "${pch_off[@]}" &&
  run_step "no CLI/tests/tutorials/bench targets, HEADLAB_BUILD_* OFF" subdir_has_no_programs
run_step "build app (links headlab::headlab)" cmake --build "$tmp/subdir/build" --target app -j "$jobs" &&
  run_step "run app" "$tmp/subdir/build/app"
run_step "its install holds no headlab files" subdir_installs_nothing

echo "== check_examples: ${passed} checks passed, ${#failures[@]} failed, in $(( $(date +%s) - start )) s"
if [ "${#failures[@]}" -gt 0 ]; then
  printf '   failed: %s\n' "${failures[@]}"
  exit 1
fi
