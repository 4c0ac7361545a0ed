#!/usr/bin/env python3
"""Single-GPU overhead of tnt.Model.fit against plain PyTorch: ResNet-18
(torchvision), batch 128, 224x224 synthetic images, SGD with momentum 0.9,
fp32 and fp16 (autocast + dynamic loss scaling), in one process so that
both run with the same TF32 setting and the same GPU state.

    tarantella -n 1 -- bench/gpu/resnet_overhead.py [--steps 25 --warmup 10]
    tarantella -n 1 --no-gpu -- bench/gpu/resnet_overhead.py --device cpu \
        --steps 2 --warmup 1 --batch-size 4 --image-size 32 --precisions float32
The second is a dry run of the script itself on a machine without a GPU
(its figures mean nothing).

Three step times per precision, mean over --steps after --warmup steps:
  device     plain PyTorch, one batch resident on the GPU (shared/GPU.md's
             baseline: no input copies at all);
  host       plain PyTorch over the same host-side batches a data pipeline
             delivers, pinned (as DataLoader(pin_memory=True) hands them
             over) and copied with non_blocking=True each step;
  tnt        tnt.Model(...).fit(x, y, batch_size=128) on the same host tensors,
             through the framework's dataset pipeline, as a user calls it.
The goal is tnt <= 1.03 x host. Prints one JSON line per precision
("RESULT {...}") and a Markdown table on the master rank.
"""
import argparse
import json
import time

import torch
import torchvision

import tarantella as tnt


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def plain_steps(dev, batches, steps, warmup, precision, resident):
    """Mean ms per step of a plain loop over `batches` (host, pinned), or over
    one resident device batch."""
    torch.manual_seed(1)
    net = torchvision.models.resnet18(num_classes=1000).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    fp16 = precision == "float16"
    scaler = torch.amp.GradScaler(dev.type, enabled=fp16)
    if resident:
        x0, y0 = batches[0][0].to(dev), batches[0][1].to(dev)

    def step(i):
        if resident:
            x, y = x0, y0
        else:
            hx, hy = batches[i % len(batches)]
            x, y = hx.to(dev, non_blocking=True), hy.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.float16, enabled=fp16):
            loss = loss_fn(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for i in range(warmup):
        step(i)
    sync(dev)
    start = time.perf_counter()
    for i in range(steps):
        step(warmup + i)
    sync(dev)
    return (time.perf_counter() - start) * 1e3 / steps


def tnt_steps(dev, images, labels, steps, warmup, batch, precision):
    """Mean ms per step of tnt.Model.fit: a warm-up fit, then a timed one."""
    torch.manual_seed(1)
    model = tnt.Model(torchvision.models.resnet18(num_classes=1000))
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                  loss=torch.nn.CrossEntropyLoss(),
                  mixed_precision=precision if precision != "float32" else None)
    model.fit(images[:warmup * batch], labels[:warmup * batch], batch_size=batch, epochs=1,
              shuffle=False, verbose=0)
    sync(dev)
    start = time.perf_counter()
    model.fit(images[warmup * batch:], labels[warmup * batch:], batch_size=batch, epochs=1,
              shuffle=False, verbose=0)
    sync(dev)
    return (time.perf_counter() - start) * 1e3 / steps, str(model._impl.device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--precisions", default="float32,float16")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run of this script without a GPU (launch with --no-gpu)")
    a = p.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("resnet_overhead: no CUDA device visible to torch: run on a GPU machine "
                         "(or dry-run the script with --device cpu)")
    if tnt.get_size() != 1:
        raise SystemExit("resnet_overhead measures one rank: tarantella -n 1 -- ...")
    b, n = a.batch_size, a.steps + a.warmup
    g = torch.Generator().manual_seed(0)
    images = torch.randn(n * b, 3, a.image_size, a.image_size, generator=g)
    labels = torch.randint(0, 1000, (n * b,), generator=g)
    pin = (lambda t: t.pin_memory()) if dev.type == "cuda" else (lambda t: t)
    batches = [(pin(images[i * b:(i + 1) * b]), pin(labels[i * b:(i + 1) * b])) for i in range(n)]
    tf32 = {"matmul": torch.backends.cuda.matmul.allow_tf32,
            "cudnn": torch.backends.cudnn.allow_tf32}
    rows = []
    for precision in a.precisions.split(","):
        device_ms = plain_steps(dev, batches, a.steps, a.warmup, precision, True)
        host_ms = plain_steps(dev, batches, a.steps, a.warmup, precision, False)
        tnt_ms, where = tnt_steps(dev, images, labels, a.steps, a.warmup, b, precision)
        row = {"precision": precision, "device_ms": round(device_ms, 2),
               "host_ms": round(host_ms, 2), "tnt_ms": round(tnt_ms, 2),
               "tnt_over_host": round(tnt_ms / host_ms, 3), "tnt_device": where,
               "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu (dry run)",
               "torch": torch.__version__, "tf32": tf32,
               "batch": b, "steps": a.steps, "warmup": a.warmup}
        print("RESULT " + json.dumps(row), flush=True)
        rows.append(row)
    print("\n| ResNet-18, batch %d, %s | plain, batch on device (ms) | plain, pinned host batches "
          "(ms) | tnt.Model.fit (ms) | tnt / plain host |" % (b, rows[0]["gpu"]))
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['precision']} | {r['device_ms']} | {r['host_ms']} | {r['tnt_ms']} | "
              f"{r['tnt_over_host']} |")


if __name__ == "__main__":
    main()
