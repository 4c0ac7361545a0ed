#!/usr/bin/env python3
"""Proves that the built binaries load libstdc++ before LibTorch.

pip torch's libtorch.so (2.11 at least) exports statically linked copies of
libstdc++'s std::filesystem functions, and some of them crash
(std::filesystem::remove_all jumps to address 0). The dynamic linker takes a
symbol from the first library that defines it, in the order of a binary's
needed libraries, so libstdc++.so.6 must come before every torch library
there (cmake/TntTorch.cmake). This reads each binary's needed libraries with
readelf and fails naming the binary and the order.

    check_libstdcxx_first.py BINARY...
    check_libstdcxx_first.py --self-test
"""
import re
import subprocess
import sys

TORCH_LIBS = re.compile(r"^lib(torch|torch_cpu|torch_cuda|c10|c10_cuda)\.so")


def needed(binary):
    """The binary's needed libraries, in order."""
    out = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def problem(binary, libs):
    """What is wrong with one binary's order; None when nothing."""
    torch = [i for i, lib in enumerate(libs) if TORCH_LIBS.match(lib)]
    if not torch:
        return f"{binary}: needs no torch library: is it still a torch user? ({', '.join(libs)})"
    if "libstdc++.so.6" not in libs:
        return f"{binary}: does not name libstdc++.so.6 ({', '.join(libs)})"
    first = libs.index("libstdc++.so.6")
    if first > torch[0]:
        return (f"{binary}: needs {libs[torch[0]]} before libstdc++.so.6 "
                f"({', '.join(libs)}): torch's std::filesystem copies would win; "
                f"link with TNT_LIBSTDCXX_FIRST (cmake/TntTorch.cmake)")
    return None


def self_test():
    good = ["libstdc++.so.6", "libtarantella.so.0.1", "libtorch.so", "libc10.so", "libc.so.6"]
    bad = ["libtarantella.so.0.1", "libtorch.so", "libc10.so", "libstdc++.so.6", "libc.so.6"]
    assert problem("good", good) is None
    assert "before libstdc++" in problem("bad", bad)
    assert "no torch library" in problem("plain", ["libstdc++.so.6", "libc.so.6"])
    assert "does not name" in problem("c", ["libtorch.so", "libc.so.6"])
    print("check_libstdcxx_first: self-test passed")
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    found = [p for p in (problem(b, needed(b)) for b in argv) if p]
    for p in found:
        print(p, file=sys.stderr)
    if found:
        return 1
    print(f"check_libstdcxx_first: {len(argv)} binaries load libstdc++ before torch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
