#!/usr/bin/env bash
# Regenerates docs/images/explorer.png, the README's picture of the head explorer:
#   docs/tools/make_explorer_screenshot.sh [BUILD_DIR]        (default build/release; ~1 min)
# trains the README's induction model (2 layers, attention only), prunes it, writes its explorer
# page and photographs it in headless Chromium: layer 1's first head enlarged, a token of the
# repeated half hovered. Needs scripts/setup.sh --with-browser.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
hl=$build/apps/headlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$hl" train --task induction --run-dir "$work/induction" --progress none > /dev/null
"$hl" prune --checkpoint "$work/induction/checkpoint.safetensors" --sequences 256 > /dev/null
"$hl" explore --checkpoint "$work/induction/checkpoint.safetensors" --out "$work/explorer.html"
mkdir -p docs/images
(cd tests/browser && node screenshot.js "$work/explorer.html" "$OLDPWD/docs/images/explorer.png")
