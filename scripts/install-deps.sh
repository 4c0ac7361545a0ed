#!/usr/bin/env bash
# Installs every build and run dependency of Tarantella from Debian 12
# packages. Idempotent: running it again changes nothing. Run as root (or
# with sudo available).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev                  # LibTorch 1.13 (C++ frontend)
  libopenmpi-dev openmpi-bin    # MPI runtime and mpirun
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libopenblas0-openmp           # fast BLAS; see the alternatives step below
  numactl                       # --pin-to-socket
  dataset-fashion-mnist         # example data set
  procps                        # pkill/pgrep for --cleanup
  python3-torch                 # the peer: TorchScript models in tests, DDP in benchmarks
  python3-dev pybind11-dev python3-pybind11  # the Python front end's extension (src/python)
  python3-numpy python3-pytest python3-torchvision  # its inputs, test suite and examples
  mypy                          # its type hints: mypy --strict and stubtest (python.mypy)
  python3-venv                  # the pip-torch leg's venv (scripts/test-pip.sh)
  protobuf-compiler libprotobuf-dev  # TensorBoard event files (protoc + runtime)
  libcurl4-openssl-dev          # RemoteMonitor's HTTP POST
  libjpeg62-turbo-dev libpng-dev  # image decoding in data/ (image sources, shards)
  iproute2                      # ip/tc: the simulated cluster (bench/cluster, tests/cluster)
  munge slurmctld slurmd slurm-client  # a real Slurm on the simulated hosts (bench/cluster/slurm.sh)
  clang libfuzzer-14-dev        # the libFuzzer targets (tests/fuzz, scripts/fuzz.sh)
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# Debian's LibTorch calls the system libblas.so.3. Make OpenBLAS the provider:
# the netlib reference BLAS is ~20x slower for training.
arch_dir=/usr/lib/x86_64-linux-gnu
[ -d "$arch_dir" ] || arch_dir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
openblas=$(ls "$arch_dir"/openblas-openmp/libblas.so.3 2>/dev/null || true)
if [ -n "$openblas" ]; then
  $SUDO update-alternatives --set "libblas.so.3-$(basename "$arch_dir")" "$openblas" >/dev/null
  openlapack=$(ls "$arch_dir"/openblas-openmp/liblapack.so.3 2>/dev/null || true)
  if [ -n "$openlapack" ]; then
    $SUDO update-alternatives --set "liblapack.so.3-$(basename "$arch_dir")" "$openlapack" >/dev/null || true
  fi
  echo "install-deps: system BLAS is $(readlink -f "$arch_dir/libblas.so.3")"
fi
