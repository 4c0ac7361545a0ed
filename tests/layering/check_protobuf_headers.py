#!/usr/bin/env python3
"""Proves that the TensorBoard writer compiles against the system's protobuf.

A pip or conda torch bundles an older google/protobuf in its include
directory. The files that include the generated messages (the object library
tnt_tb_events, src/callbacks/io_sources.cmake) must never see it. This runs
each such file's own compile command from compile_commands.json with -M
(the headers it reads, nothing compiled) and fails when any google/protobuf
header, or any header at all, comes from a torch include directory, naming the
file and the header.

    check_protobuf_headers.py BUILD_DIR
    check_protobuf_headers.py --self-test
"""
import json
import os
import shlex
import subprocess
import sys

# The sources that include callbacks/tensorboard_proto.h.
PROTOBUF_USERS = ("callbacks/event_file.cpp", "callbacks/event_writer.cpp",
                  "tensorboard_event.pb.cc")


def torch_include(path):
    """True for a header inside a torch installation's include directory."""
    parts = os.path.normpath(path).split(os.sep)
    return any(parts[i] == "torch" and parts[i + 1] == "include" for i in range(len(parts) - 1))


def problems(source, headers):
    """What is wrong with the headers one source reads; [] when nothing."""
    found = []
    protobuf = [h for h in headers if "/google/protobuf/" in h]
    if not protobuf:
        found.append(f"{source}: reads no google/protobuf header: is it still a protobuf user?")
    for h in headers:
        if torch_include(h):
            found.append(f"{source}: reads {h}, from torch's include directory: "
                         "its protobuf code must see only the system's headers")
    return found


def headers_of(entry):
    """The headers the compile command of one compile_commands.json entry reads."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD", "-c") or a.startswith("-Winvalid-pch"):
            continue
        out.append(a)
    # The precompiled header's -include is dropped with its argument: -M
    # lists the headers a source reads by itself.
    cleaned = []
    i = 0
    while i < len(out):
        if out[i] == "-include" and i + 1 < len(out) and "cmake_pch" in out[i + 1]:
            i += 2
            continue
        cleaned.append(out[i])
        i += 1
    result = subprocess.run(cleaned + ["-M"], cwd=entry["directory"], capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: the compile command of {entry['file']} failed "
                 f"under -M:\n{result.stderr}")
    words = result.stdout.replace("\\\n", " ").split()
    return [os.path.normpath(os.path.join(entry["directory"], w)) for w in words[1:]]


def self_test():
    ok = ["/usr/include/google/protobuf/message_lite.h", "/usr/include/c++/12/string"]
    assert problems("x.cpp", ok) == [], problems("x.cpp", ok)
    bad = ok + ["/v/lib/python3.11/site-packages/torch/include/google/protobuf/port_def.inc"]
    assert len(problems("x.cpp", bad)) == 1 and "torch's include" in problems("x.cpp", bad)[0]
    assert "reads no google/protobuf" in problems("x.cpp", ["/usr/include/stdio.h"])[0]
    print("check_protobuf_headers: self-test passed")


def compile_commands(self_test_fn, usage):
    """The entries of BUILD_DIR/compile_commands.json for a checker called
    as `CHECKER BUILD_DIR` or `CHECKER --self-test` (then None)."""
    tool = os.path.basename(sys.argv[0]).removesuffix(".py")
    if sys.argv[1:] == ["--self-test"]:
        self_test_fn()
        return None
    if len(sys.argv) != 2:
        sys.exit(usage)
    path = os.path.join(sys.argv[1], "compile_commands.json")
    if not os.path.exists(path):
        sys.exit(f"{tool}: {path} is missing: configure with "
                 "CMAKE_EXPORT_COMPILE_COMMANDS=ON (the top CMakeLists.txt sets it)")
    with open(path) as f:
        entries: list = json.load(f)
    return entries


def main():
    every = compile_commands(self_test, __doc__)
    if every is None:
        return
    entries = [e for e in every if e["file"].endswith(PROTOBUF_USERS)]
    if len(entries) != len(PROTOBUF_USERS):
        sys.exit(f"check_protobuf_headers: expected compile commands for {PROTOBUF_USERS}, "
                 f"found {[e['file'] for e in entries]}")
    found = []
    for e in entries:
        found += problems(e["file"], headers_of(e))
    if found:
        sys.exit("check_protobuf_headers: FAILED\n" + "\n".join(found))
    print(f"check_protobuf_headers: {len(entries)} files read only the system's protobuf")


if __name__ == "__main__":
    main()
