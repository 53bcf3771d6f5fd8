#!/usr/bin/env bash
# Quick start, command 1: install dependencies, build (release preset), run the main job.
# Until the copy-task trainer exists the main job is the autograd smoke program:
# a tiny MLP trained on two spirals, printing its loss as it falls.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake --preset release
cmake --build --preset release
./build/release/framework/headlab mlp-demo "$@"
