#!/usr/bin/env bash
# Installs headlab's build dependencies from Debian 12 packages, idempotently:
# packages already present are not touched, and nothing runs when all are there.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake
  xtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev libopenblas-dev
  doctest-dev libcli11-dev nlohmann-json3-dev
)
# Optional extras, one flag each:
#   --with-torch  regenerating the PyTorch fixtures (scripts/make_op_fixtures.py)
#   --with-fuzz   clang and its libFuzzer/sanitizer runtimes (the fuzz preset, scripts/fuzz.sh)
#   --with-pictures  rsvg-convert, the SVG to PNG renderer of scripts/make_pictures.sh
for flag in "$@"; do
  case "$flag" in
    --with-torch) packages+=(python3-torch python3-numpy) ;;
    --with-fuzz) packages+=(clang libclang-rt-14-dev) ;;
    --with-pictures) packages+=(librsvg2-bin) ;;
    *) echo "setup: unknown flag $flag (known: --with-torch, --with-fuzz, --with-pictures)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all dependencies present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
