#!/usr/bin/env bash
# The reference study's plots (results/scaling/plots) are what scripts/plot_sweep draws from its
# committed sweep.csv, byte for byte: the command is the one results/scaling/README.md shows,
# drawn into a scratch folder. Usage: test_reference_plots.sh SOURCE_DIR.
set -euo pipefail
cd "$1"
D=$(mktemp -d /tmp/fracsim-reference-plots.XXXXXX)
trap 'rm -rf "$D"' EXIT

line=$(grep -m1 '^\$ scripts/plot_sweep results/scaling/sweep.csv ' results/scaling/README.md) || {
  echo "error: results/scaling/README.md shows no scripts/plot_sweep command"; exit 1; }
read -ra cmd <<<"${line#\$ }"
redirected=0
for i in "${!cmd[@]}"; do
  if [ "${cmd[$i]}" = --out ]; then
    [ "${cmd[$((i + 1))]}" = results/scaling/plots ] || {
      echo "error: the README's command draws into ${cmd[$((i + 1))]}"; exit 1; }
    cmd[$((i + 1))]="$D/plots"
    redirected=1
  fi
done
# Without --out the command would draw over the committed plots and compare them with themselves.
[ "$redirected" = 1 ] || {
  echo "error: the README's command names no --out results/scaling/plots"; exit 1; }
"${cmd[@]}" >/dev/null

committed=$(cd results/scaling/plots && ls | sort)
drawn=$(cd "$D/plots" && ls | sort)
if [ "$committed" != "$drawn" ]; then
  echo "error: results/scaling/plots holds"; echo "$committed"; echo "the command draws"
  echo "$drawn"; exit 1
fi
for f in "$D"/plots/*; do
  cmp "$f" "results/scaling/plots/$(basename "$f")" || {
    echo "error: results/scaling/plots/$(basename "$f") is not what the command draws"; exit 1; }
done
echo "ok: $(echo "$drawn" | wc -l) plots, the committed bytes"
