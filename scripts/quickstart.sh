#!/usr/bin/env bash
# Quick start, command 1: install dependencies, build (release preset), run the main job:
# train the copy-task transformer (The Annotated Transformer's set-up, data generated in
# memory from a seed) until greedy decoding copies 1000 held-out sequences exactly.
# Extra arguments go to `headlab train`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release
jobs=$(./scripts/build_jobs.sh)  # one compiler process per core, memory allowing (HEADLAB_JOBS=N sets it)
cmake --build --preset release -j "$jobs"
./build/release/apps/headlab train --task copy --run-dir runs/copy "$@"
