#!/usr/bin/env bash
# Side by side: the library's image pipeline (bench_images) and torchvision's
# ImageFolder + DataLoader, same transforms, same worker count, on a
# generated folder of 500x375 JPEGs. ROUNDS rounds, each running ours then
# theirs, so both see the same load; prints images per wall-clock second and
# per CPU second ("per core": on a shared machine the fairer measure), each
# round's ratios and the median ratios.
#   bench/images/run.sh [IMAGES=256] [WORKERS=1] [PASSES=2] [ROUNDS=3]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
n=${1:-256}; workers=${2:-1}; passes=${3:-2}; rounds=${4:-3}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 "$root/bench/images/torchvision_images.py" --make "$dir" "$n"
rate() { sed "s/.*: \([0-9.]*\) images\/s, \([0-9.]*\) images\/cpu-s.*/\\$1/" <<<"$2"; }
wall=(); cpu=()
for ((r = 1; r <= rounds; r++)); do
  ours=$("$build/bench/images/bench_images" "$dir" "$workers" "$passes")
  theirs=$(/usr/bin/python3 "$root/bench/images/torchvision_images.py" "$dir" "$workers" "$passes")
  echo "$ours"; echo "$theirs"
  w=$(/usr/bin/python3 -c "print(f'{$(rate 1 "$ours") / $(rate 1 "$theirs"):.2f}')")
  c=$(/usr/bin/python3 -c "print(f'{$(rate 2 "$ours") / $(rate 2 "$theirs"):.2f}')")
  echo "round $r: ratio tarantella/torchvision $w per wall-clock second, $c per CPU second" \
       "(load $(cut -d' ' -f1 /proc/loadavg))"
  wall+=("$w"); cpu+=("$c")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "median ratio over $rounds rounds: $(median "${wall[@]}") per wall-clock second," \
     "$(median "${cpu[@]}") per CPU second"
