#!/usr/bin/env bash
# fracsim sweep --plots draws every plot of tests/cli/sweep-small.yaml, and scripts/plot_sweep
# redraws them from sweep.csv byte for byte. Usage: test_plot_sweep.sh FRACSIM SOURCE_DIR.
set -euo pipefail
fracsim=$1
cd "$2"
D=$(mktemp -d /tmp/fracsim-plots.XXXXXX)
trap 'rm -rf "$D"' EXIT

"$fracsim" sweep tests/cli/sweep-small.yaml -j 2 --out "$D/s" --plots >"$D/log" 2>&1 || {
  cat "$D/log"; exit 1; }
# The roofline chart is of the run with most leaves of the first workload.
roofline=roofline-$(grep -o '^leaves-0016-mlp-b1-timing-[0-9a-f]*' "$D/s/sweep.csv")
expected=""
for name in mlp-throughput mlp-energy mlp-ops-per-j mlp-cycles "$roofline"; do
  for ext in png svg; do expected+="$name.$ext"$'\n'; done
done
got=$(cd "$D/s/plots" && ls | sort)
if [ "$got" != "$(printf '%s' "$expected" | sort)" ]; then
  echo "error: plots made:"; echo "$got"; echo "expected:"; printf '%s' "$expected"; exit 1
fi
for f in "$D"/s/plots/*; do [ -s "$f" ] || { echo "error: $f is empty"; exit 1; }; done
head -c 8 "$D/s/plots/mlp-cycles.png" | od -An -c | grep -q 'P   N   G' || {
  echo "error: mlp-cycles.png is not a PNG"; exit 1; }

scripts/plot_sweep "$D/s/sweep.csv" --out "$D/again" >/dev/null
for f in "$D"/s/plots/*; do
  cmp "$f" "$D/again/$(basename "$f")" || { echo "error: $(basename "$f") differs on rerun"; exit 1; }
done
# A run that is not in the CSV.
if out=$(scripts/plot_sweep "$D/s/sweep.csv" --out "$D/x" --roofline nope 2>&1); then
  echo "error: --roofline nope succeeded"; exit 1
fi
[ "$out" = "--roofline nope: no such run in $D/s/sweep.csv" ] || { echo "error: got '$out'"; exit 1; }
echo "ok: 10 plots, byte-identical on rerun"
