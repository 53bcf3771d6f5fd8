#!/usr/bin/env bash
# Quick start, command 1: install dependencies, build (release preset), run the main job:
# train the copy-task transformer (The Annotated Transformer's set-up, data generated in
# memory from a seed) until greedy decoding copies 1000 held-out sequences exactly.
# Extra arguments go to `headlab train`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release
cmake --build --preset release -j "$(./scripts/build_jobs.sh)"  # one job per core (memory allowing)
./build/release/apps/headlab train --task copy --run-dir runs/copy "$@"
