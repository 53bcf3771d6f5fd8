#!/usr/bin/env bash
# Installs headlab's build dependencies from Debian 12 packages, idempotently:
# packages already present are not touched, and nothing runs when all are there.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake
  xtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev libopenblas-dev
  doctest-dev libcli11-dev nlohmann-json3-dev libboost-math-dev
  python3  # the python-based tests (the translation page's showcase writer, bench/bpe.py, hostile_inputs.sh)
)
# Optional extras, one flag each:
#   --with-torch  regenerating the PyTorch fixtures (tests/fixtures/make_op_fixtures.py)
#   --with-clang  clang and its sanitizer/libFuzzer runtimes: the debug-asan and fuzz presets
#   --with-fuzz   the same (the fuzz preset, fuzz/fuzz.sh)
#   --with-scipy  SciPy, for the study reports' statistics (docs/studies/*/report.py) and their fixtures
#   --with-pictures  rsvg-convert, the SVG to PNG renderer of docs/tools/make_pictures.sh
#   --with-browser  Chromium, node and npm, then `npm ci` in tests/browser (playwright-core, pinned
#                 by its package-lock.json): the head explorer's browser test (ctest -L browser)
browser=0
for flag in "$@"; do
  case "$flag" in
    --with-torch) packages+=(python3-torch python3-numpy) ;;
    --with-clang | --with-fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --with-scipy) packages+=(python3-scipy) ;;
    --with-pictures) packages+=(librsvg2-bin) ;;
    --with-browser)  # (a nodejs that bundles npm, as NodeSource's, conflicts with Debian's npm package)
      packages+=(chromium nodejs)
      command -v npm > /dev/null || packages+=(npm)
      browser=1 ;;
    *) echo "setup: unknown flag $flag (known: --with-torch, --with-clang, --with-fuzz, --with-scipy, --with-pictures, --with-browser)" >&2; exit 2 ;;
  esac
done

# The npm modules of the browser test, once the packages are there (npm ci: exactly the lock file).
browser_modules() {
  [[ $browser -eq 1 ]] || return 0
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/browser"
  if [[ -f "$dir/node_modules/playwright-core/package.json" ]]; then
    echo "setup: tests/browser/node_modules present"
  else
    echo "setup: npm ci in tests/browser"
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all dependencies present"
  browser_modules
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
# an install killed half-way (e.g. an interrupted earlier run) leaves dpkg needing
# "dpkg --configure -a"; apt-get refuses everything until it is done
if [[ -n "$($SUDO dpkg --audit 2>/dev/null)" ]]; then
  echo "setup: finishing an interrupted dpkg run (dpkg --configure -a)"
  DEBIAN_FRONTEND=noninteractive $SUDO dpkg --configure -a
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
browser_modules
