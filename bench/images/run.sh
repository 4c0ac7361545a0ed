#!/usr/bin/env bash
# Side by side, in one run: the library's image pipeline (bench_images) and
# torchvision's ImageFolder + DataLoader, same transforms, same worker count,
# on a generated folder of 500x375 JPEGs. Prints images per wall-clock second
# and per CPU second ("per core": on a shared machine the fair measure) and
# the ratios.
#   bench/images/run.sh [IMAGES=256] [WORKERS=1] [PASSES=2]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${TNT_BUILD_DIR:-$root/build}
n=${1:-256}; workers=${2:-1}; passes=${3:-2}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 "$root/bench/images/torchvision_images.py" --make "$dir" "$n"
ours=$("$build/bench/images/bench_images" "$dir" "$workers" "$passes")
theirs=$(/usr/bin/python3 "$root/bench/images/torchvision_images.py" "$dir" "$workers" "$passes")
echo "$ours"; echo "$theirs"
rate() { sed "s/.*: \([0-9.]*\) images\/s, \([0-9.]*\) images\/cpu-s.*/\\$1/" <<<"$2"; }
/usr/bin/python3 -c "print(f'ratio tarantella/torchvision: {$(rate 1 "$ours") / $(rate 1 "$theirs"):.2f} per wall-clock second, {$(rate 2 "$ours") / $(rate 2 "$theirs"):.2f} per CPU second; load {open('/proc/loadavg').read().split()[0]}')"
