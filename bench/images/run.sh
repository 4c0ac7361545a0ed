#!/usr/bin/env bash
# Side by side, in one run: the library's image pipeline (bench_images) and
# torchvision's ImageFolder + DataLoader, same transforms, same worker count,
# on a generated folder of 500x375 JPEGs. Prints images/s and the ratio.
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
a=$(sed 's/.*: \([0-9.]*\) images.*/\1/' <<<"$ours"); b=$(sed 's/.*: \([0-9.]*\) images.*/\1/' <<<"$theirs")
/usr/bin/python3 -c "print(f'ratio tarantella/torchvision: {$a / $b:.2f}')"
