#!/usr/bin/env python3
"""Proves that the sources that use CUDA find its headers through the build.

The NCCL backend includes nccl.h, c10/cuda and ATen/cuda, which include
cuda.h and cuda_runtime.h from the CUDA toolkit. The build must name the
toolkit's include directory (torch::cudart carries it, cmake/TntTorch.cmake);
a machine whose /usr/local/include happens to hold links to those headers
would otherwise hide that it does not, and a GPU machine without them would
fail to compile the library. This runs the compile command of each source
that includes an src/comm/nccl/ or tests/cuda/ file (a unity batch, or the
file itself) with -M, and fails, naming the file and the header, when a CUDA
header comes from /usr/local/include, or when none of them reads one.

    check_cuda_headers.py BUILD_DIR
    check_cuda_headers.py --self-test
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_protobuf_headers import compile_commands, headers_of  # noqa: E402  (the same -M run)

CUDA_HEADERS = ("cuda.h", "cuda_runtime.h", "cuda_runtime_api.h")


def cuda_headers(headers):
    return [h for h in headers if os.path.basename(h) in CUDA_HEADERS]


def problems(source, headers):
    """What is wrong with the CUDA headers one source reads; [] when nothing
    (a source that reads none, e.g. nccl_plan.cpp alone, is fine: main()
    asks that some do)."""
    return [f"{source}: reads {h} from /usr/local/include, a folder on this machine's default "
            "search path only: the build must name the CUDA toolkit's include directory "
            "(torch::cudart's INTERFACE_INCLUDE_DIRECTORIES, cmake/TntTorch.cmake)"
            for h in cuda_headers(headers) if h.startswith("/usr/local/include/")]


def uses_cuda(entry):
    """True for a compile command of a CUDA user: an NCCL source, tests/cuda,
    or a unity batch that includes an NCCL source."""
    path = entry["file"]
    if "/src/comm/nccl/nccl_" in path and not path.endswith("nccl_absent.cpp"):
        return True
    if "/tests/cuda/" in path and path.endswith(".cpp"):
        return True
    if "/Unity/" in path and os.path.exists(path):
        with open(path) as f:
            text = f.read()
        return "/src/comm/nccl/nccl_" in text or "/tests/cuda/" in text
    return False


def self_test():
    ok = ["/usr/local/cuda/include/cuda.h", "/usr/include/c++/12/string"]
    assert problems("x.cpp", ok) == [], problems("x.cpp", ok)
    bad = ["/usr/local/include/cuda_runtime.h", "/usr/local/include/cuda.h"]
    assert len(problems("x.cpp", bad)) == 2 and "/usr/local/include" in problems("x.cpp", bad)[0]
    assert problems("x.cpp", ["/usr/include/stdio.h"]) == []
    print("check_cuda_headers: self-test passed")


def main():
    every = compile_commands(self_test, __doc__)
    if every is None:
        return
    entries = [e for e in every if uses_cuda(e)]
    if not entries:
        sys.exit("check_cuda_headers: no compile command of an NCCL source: was the build "
                 "configured with NCCL (TNT_NCCL=ON)?")
    found = []
    readers = 0
    for e in entries:
        headers = headers_of(e)
        readers += bool(cuda_headers(headers))
        found += problems(e["file"], headers)
    if not readers:
        found.append(f"none of {len(entries)} NCCL sources reads any of {CUDA_HEADERS}: "
                     "is this check still looking at the CUDA users?")
    if found:
        sys.exit("check_cuda_headers: FAILED\n" + "\n".join(found))
    print(f"check_cuda_headers: {readers} of {len(entries)} NCCL and tests/cuda sources read "
          "CUDA's headers, all through the build's include directories")


if __name__ == "__main__":
    main()
