#!/usr/bin/env python3
"""The training step's files read no device value on the host except
through train/observe/host_reads.h (read_state, read_flag), whose reads a test
counts (tests/unit/host_sync_test.cpp).

A read of a tensor that may live on a GPU (.item(), .cpu(), .to(kCPU),
data_ptr, toDouble) makes the host wait for every kernel queued before it.
In the files below such a call is allowed only on a line that says why:
  // host-only: <why the tensor is in host memory>   (no synchronisation)
  // host-sync: <where the docs name this synchronisation>
Fails naming the file, line and call of any other.

  scripts/check_host_sync.py [--root DIR]
  scripts/check_host_sync.py --self-test
"""
import argparse
import pathlib
import re
import sys

# The step, the loops around it and what they call every step.
FILES = [
    "src/train/step/train_step.cpp",
    "src/train/loop/fit_loop.cpp",
    "src/train/loop/evaluate_loop.cpp",
    "src/train/loop/callback_list.cpp",
    "src/train/observe/progbar_logger.cpp",
    "src/train/observe/progress_bar.cpp",
    "src/train/step/mixed_precision.cpp",
    "src/train/step/clip_norm.cpp",
    "src/train/engine/engine_state.cpp",
    "src/dp/gradient_sync.cpp",
    "src/keras/losses.cpp",
    "src/keras/metrics.cpp",
    "src/keras/sync_batchnorm.cpp",
]
# LibTorch's clip_grad_norm_ returns the norm as a double: a hidden .item()
# (train/step/clip_norm.h clips without it).
READ = re.compile(r"\.item\s*(<|\()|\.cpu\s*\(|\.to\s*\(\s*(torch|at|c10)::kCPU|data_ptr\b|"
                  r"\.toDouble\s*\(|\.tolist\s*\(|utils::clip_grad_norm_\s*\(")
ALLOWED = re.compile(r"//\s*host-(only|sync):\s*\S")


def problems(text, name):
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        match = READ.search(code)
        if match and not ALLOWED.search(line):
            out.append(f"{name}:{number}: '{match.group(0).strip()}' reads a tensor on the host "
                       "outside train/observe/host_reads.h: use read_state()/read_flag(), or mark the "
                       "line '// host-only: <why>' or '// host-sync: <where documented>'")
    return out


def self_test():
    bad = ("  double x = loss.item<double>();\n  auto y = t.cpu();\n"
           "  torch::nn::utils::clip_grad_norm_(params, 1.0);\n")
    good = ("  int s = stop.item<int>();  // host-only: a host tensor\n"
            "  // a comment may say .item() freely\n  return read_state(state);\n")
    assert len(problems(bad, "bad.cpp")) == 3, problems(bad, "bad.cpp")
    assert problems(good, "good.cpp") == [], problems(good, "good.cpp")
    print("check_host_sync self-test: ok")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=pathlib.Path(__file__).resolve().parent.parent)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return 0
    root = pathlib.Path(args.root)
    found = []
    for name in FILES:
        found += problems((root / name).read_text(), name)
    for p in found:
        print(p, file=sys.stderr)
    if not found:
        print(f"check_host_sync: {len(FILES)} files, no unmarked host read")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
