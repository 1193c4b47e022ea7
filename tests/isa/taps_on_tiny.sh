#!/bin/sh
# Runs the programs of tests/isa/taps/ (a pooling or a convolution whose one output window is
# larger than a cyclic sub-block of configs/tiny.yaml) on tiny in functional mode, with both
# decomposer policies, and requires every output to match the reference bit for bit.
# Usage: taps_on_tiny.sh FRACSIM (from the project root).
set -eu
fracsim=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for f in tests/isa/taps/*.fasm; do
  for policy in halving search; do
    if ! "$fracsim" run -m configs/tiny.yaml -w "$f" --mode functional --out "$out" \
         --set decomposer=$policy > "$out/log" 2>&1; then
      echo "FAIL $f ($policy):"; cat "$out/log"; status=1; continue
    fi
    if grep -q "match the reference bit for bit" "$out/log"; then
      echo "ok   $f ($policy): $(grep -o 'cycles *[0-9]*' "$out/log" | head -1)"
    else
      echo "FAIL $f ($policy): not bit for bit"; cat "$out/log"; status=1
    fi
  done
done
exit $status
