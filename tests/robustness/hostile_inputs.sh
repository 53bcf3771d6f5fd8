#!/usr/bin/env bash
# tests/robustness/hostile_inputs.sh [BUILD_DIR]: the command line against bad input and faults, as a
# careful user and an attacker would try it. Run by ctest (cli.hostile_inputs) and by hand.
#
# Every case gives the command, the exit status it must end with (2: a usage error or a bad value,
# 1: a file that cannot be used or a run that failed; docs/training.md, "Conventions of every command") and a pattern its output
# must contain. Every case must also:
#   - end within 30 s (a hang or a long allocation is a failure),
#   - print no line longer than 400 bytes (a hostile value is quoted clipped, not echoed whole),
#   - show no crash: no "bad_alloc", "terminate called", sanitizer report or signal exit status,
#   - and, where it names a run directory that holds a run, leave every file there byte-identical.
# The cases are in tests/robustness/hostile/, a file per command or concern; this file holds the
# fixtures and `check`. Prints one line per case and "N cases, N handled"; exits 1 if any case was
# not handled.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build/release}
hl=$(cd "$build" && pwd)/apps/headlab
[ -x "$hl" ] || { echo "hostile_inputs: $hl not found; build first"; exit 2; }
export HEADLAB_THREADS=1
repo=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2  # a command that wrongly starts training writes its default run dir here
total=0
handled=0
failed=()

# The state of a run directory: one line "sha256 name" per file.
dir_state() { (cd "$1" && find . -type f ! -name '.lock' -print0 | sort -z | xargs -0 -r sha256sum); }

# check NAME STATUS PATTERN [--keeps DIR] -- COMMAND...: runs one case (see the header).
check() {
  local name=$1 want=$2 pattern=$3 keeps="" before="" out=$tmp/out.txt status why=""
  shift 3
  if [ "$1" = --keeps ]; then keeps=$2; shift 2; fi
  [ "$1" = -- ] && shift
  [ -n "$keeps" ] && before=$(dir_state "$keeps")
  # At most 8 GB of address space: a missing memory check fails fast instead of exhausting the machine.
  (ulimit -v 8000000; exec timeout 30 "$@") > "$out" 2>&1 < /dev/null
  status=$?
  total=$((total + 1))
  if [ "$status" -eq 124 ]; then why="did not end within 30 s"
  elif [ "$status" -ne "$want" ]; then why="exit status $status, expected $want"
  elif ! grep -Eq -- "$pattern" "$out"; then why="output does not match /$pattern/"
  elif grep -Eq 'bad_alloc|terminate called|AddressSanitizer|runtime error:|Segmentation' "$out"; then why="crash text in the output"
  elif [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$out")" -gt 400 ]; then why="a line longer than 400 bytes"
  elif [ -n "$keeps" ] && [ "$(dir_state "$keeps")" != "$before" ]; then why="changed files in $keeps"
  fi
  if [ -z "$why" ]; then
    handled=$((handled + 1))
    printf '  ok    %s\n' "$name"
  else
    printf '  FAIL  %s: %s\n' "$name" "$why"
    head -c 600 "$out" | sed 's/^/        | /'
    echo
    failed+=("$name")
  fi
}

# A safetensors file changed in Python: craft SRC DST EDIT [ARG]. EDIT is one of
#   nan            every float of the first model tensor becomes NaN
#   option K=V     the metadata's options text gets K = V
#   meta K=V       a metadata entry K is set to V
#   header-size N  the 8-byte header length becomes N
#   grow N         N zero bytes are appended (a file larger than its header says)
craft() {
  python3 - "$@" <<'EOF'
import json, re, struct, sys
src, dst, edit = sys.argv[1], sys.argv[2], sys.argv[3]
arg = sys.argv[4] if len(sys.argv) > 4 else ""
data = bytearray(open(src, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = data[8 + n:]
if edit == "nan":
    name = next(k for k in header if k.startswith("model."))
    a, b = header[name]["data_offsets"]
    body[a:b] = struct.pack("<f", float("nan")) * ((b - a) // 4)
elif edit == "option":
    key, value = arg.split("=", 1)
    text = header["__metadata__"]["options"]
    text = re.sub(r"(?m)^%s = .*$" % re.escape(key), "%s = %s" % (key, value), text)
    header["__metadata__"]["options"] = text
elif edit == "meta":
    key, value = arg.split("=", 1)
    header["__metadata__"][key] = value
if edit in ("nan", "option", "meta"):
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    data = struct.pack("<Q", len(h)) + h + body
elif edit == "header-size":
    data[:8] = struct.pack("<Q", int(arg))
elif edit == "grow":
    data += b"\0" * int(arg)
open(dst, "wb").write(bytes(data))
EOF
}

echo "== fixtures: tiny finished runs of each task"
small="--d-model 16 --heads 2 --ff 32 --layers 1 --batch 4 --progress none"
small_translate="--d-model 16 --heads 2 --ff 32 --layers 1 --max-tokens 256 --progress none"  # no --batch: translate does not read it
"$hl" train --task copy $small --steps 20 --eval-every 20 --eval-sequences 4 --run-dir "$tmp/copy" > /dev/null || exit 1
head -n 300 "$repo"/datasets/de-en/small/train.tsv > "$tmp/train.tsv"
head -n 20 "$repo"/datasets/de-en/small/valid.tsv > "$tmp/valid.tsv"
"$hl" train --task translate $small_translate --steps 10 --eval-every 10 --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" \
  --run-dir "$tmp/translate" > /dev/null || exit 1
"$hl" train --task induction $small --steps 10 --eval-every 10 --run-dir "$tmp/induction" > /dev/null || exit 1
ckpt=$tmp/copy/checkpoint.safetensors
long=$(head -c 100000 /dev/zero | tr '\0' 'x')  # a 100 kB value (one argument may hold 128 kB)

# The cases, a file per command or concern, in the order of their names (later parts use files that
# earlier ones made).
for part in "$repo"/tests/robustness/hostile/*.sh; do
  # shellcheck source=/dev/null
  source "$part"
done

echo "== hostile_inputs: $total cases, $handled handled, ${#failed[@]} not handled"
[ "${#failed[@]}" -eq 0 ] || { printf '   not handled: %s\n' "${failed[*]}"; exit 1; }
