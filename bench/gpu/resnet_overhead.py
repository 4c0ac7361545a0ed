#!/usr/bin/env python3
"""Single-GPU overhead of tnt.Model.fit against plain PyTorch: ResNet-18
(torchvision), batch 128, 224x224 synthetic images, SGD with momentum 0.9,
fp32 and fp16 (autocast + dynamic loss scaling), in one process so that all
runs have the same data, the same TF32 setting and the same GPU state.

    tarantella -n 1 -- bench/gpu/resnet_overhead.py [--steps 25 --warmup 10]
    tarantella -n 1 --no-gpu -- bench/gpu/resnet_overhead.py --device cpu \\
        --steps 2 --warmup 1 --batch-size 4 --image-size 32 --precisions float32
The second is a dry run of the script itself on a machine without a GPU
(its figures mean nothing).

Three step times per precision, each the mean over the same --steps batches
after the same --warmup batches of the same host tensors:
  resident    plain PyTorch, one batch already on the GPU (shared/GPU.md's
              baseline: no input copies at all);
  DataLoader  plain PyTorch as a careful user writes it: a
              torch.utils.data.DataLoader over a TensorDataset of the host
              tensors, pin_memory=True, --workers worker processes (0 after
              a failure there, noted), each batch copied with
              .to(device, non_blocking=True);
  tnt         tnt.Model(...).fit(x, y, batch_size=128) on the same host
              tensors, through the framework's dataset pipeline, as a user
              calls it: one fit, timed by a callback from batch --warmup to
              the epoch's end, so that its start-up is warm-up as the
              DataLoader's is.
fp16: torch.autocast + torch.amp.GradScaler on the plain side, the model's
mixed_precision="float16" on ours. The goal is tnt <= 1.03 x DataLoader.
Prints one JSON line per precision ("RESULT {...}") and a Markdown table
(its rows start "| ResNet-18").
"""
import argparse
import json
import shutil
import time

import torch
import torchvision

TF32 = {"torch-default": (False, True), "on": (True, True), "off": (False, False)}


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def set_tf32(setting):
    """(matmul, cudnn): the same for every run, set before each."""
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = setting


def tf32_now():
    return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)


def plain_trainer(dev, precision):
    """A fresh ResNet-18 and its optimizer; returns step(x, y) on device tensors."""
    torch.manual_seed(1)
    net = torchvision.models.resnet18(num_classes=1000).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    fp16 = precision == "float16"
    scaler = torch.amp.GradScaler(dev.type, enabled=fp16)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.float16, enabled=fp16):
            loss = loss_fn(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    return step


def timed(dev, batches, step, steps, warmup):
    """Mean ms per step over `steps` batches of the iterator after `warmup`."""
    for _ in range(warmup):
        step(*next(batches))
    sync(dev)
    start = time.perf_counter()
    for _ in range(steps):
        step(*next(batches))
    sync(dev)
    return (time.perf_counter() - start) * 1e3 / steps


def plain_resident(dev, images, labels, a, precision):
    step = plain_trainer(dev, precision)
    x, y = images[:a.batch_size].to(dev), labels[:a.batch_size].to(dev)

    def forever():
        while True:
            yield x, y

    return timed(dev, forever(), step, a.steps, a.warmup)


def plain_loader(dev, images, labels, a, precision, workers, prefetch=4):
    """The DataLoader baseline with `workers` worker processes, each
    `prefetch` batches ahead (in shared memory)."""
    step = plain_trainer(dev, precision)
    extra = {"prefetch_factor": prefetch, "timeout": 30} if workers else {}
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, labels), batch_size=a.batch_size, shuffle=False,
        drop_last=True, num_workers=workers, pin_memory=dev.type == "cuda", **extra)

    def on_device():
        for x, y in loader:
            yield x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)

    batches = on_device()
    try:
        return timed(dev, batches, step, a.steps, a.warmup)
    finally:
        batches.close()  # ends the loader's iterator and its workers


def tnt_fit(tnt, dev, images, labels, a, precision):
    """Mean ms per step of tnt.Model.fit over the same batches as the plain
    runs: one fit over --warmup + --steps batches, timed as `timed` times the
    plain ones, from the GPU's idle point before batch --warmup to the idle
    point after the last step (the epoch's end, its logs included). The
    fit's start-up (the state broadcast, the prefetch thread, the first
    pinned batches) falls in the warm-up, as the DataLoader's workers do.
    The timer implements on_train_batch_begin only, so it asks for no
    per-batch logs and adds no host synchronisation of its own but the two
    that bound the window."""
    torch.manual_seed(1)
    b, w = a.batch_size, a.warmup
    model = tnt.Model(torchvision.models.resnet18(num_classes=1000))
    model.compile(optimizer=torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                  loss=torch.nn.CrossEntropyLoss(),
                  mixed_precision=precision if precision != "float32" else None)

    class Window(tnt.callbacks.Callback):
        start = end = None

        def on_train_batch_begin(self, batch, logs=None):
            if batch == w:
                sync(dev)
                self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            sync(dev)
            self.end = time.perf_counter()

    window = Window()
    n = (w + a.steps) * b
    model.fit(images[:n], labels[:n], batch_size=b, epochs=1, shuffle=False, verbose=0,
              callbacks=[window])
    if window.start is None or window.end is None:
        raise SystemExit(f"resnet_overhead: the timer saw no batch {w} ({n // b} batches)")
    return (window.end - window.start) * 1e3 / a.steps, str(model._impl.device)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=25)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--precisions", default="float32,float16")
    p.add_argument("--workers", type=int, default=4,
                   help="the DataLoader's worker processes (default 4)")
    p.add_argument("--tf32", choices=sorted(TF32), default="torch-default",
                   help="TF32 for matmuls and convolutions, for every run (default: torch's "
                        "defaults, matmul off and cuDNN on)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run of this script without a GPU (launch with --no-gpu)")
    a = p.parse_args()

    import tarantella as tnt  # starts the runtime: after --help

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
    tf32 = TF32[a.tf32]
    workers = a.workers
    notes = []
    # The workers' batches wait in shared memory: a container's small
    # /dev/shm fails them ("Bus error") or stalls them into the 30 s timeout.
    # Fewer batches ahead, or none, where it cannot hold them.
    prefetch = 4
    batch_bytes = b * 3 * a.image_size * a.image_size * 4
    try:
        shm_free = shutil.disk_usage("/dev/shm").free
    except OSError:
        shm_free = None
    while workers and shm_free is not None and shm_free < 1.5 * workers * prefetch * batch_bytes:
        if prefetch > 2:
            prefetch = 2
        else:
            workers //= 2
    if (workers, prefetch) != (a.workers, 4):
        notes.append(f"/dev/shm has {shm_free / 2**20:.0f} MiB free: the DataLoader runs "
                     f"{workers} workers, {prefetch} batches ahead each")
    rows = []
    for precision in a.precisions.split(","):
        set_tf32(tf32)
        resident_ms = plain_resident(dev, images, labels, a, precision)
        set_tf32(tf32)
        try:
            loader_ms = plain_loader(dev, images, labels, a, precision, workers, prefetch)
        except RuntimeError as e:
            if not workers:
                raise
            notes.append(f"the DataLoader with {workers} workers failed ({e}); "
                         "measured with 0 workers instead")
            print("resnet_overhead: " + notes[-1], flush=True)
            workers = 0
            set_tf32(tf32)
            loader_ms = plain_loader(dev, images, labels, a, precision, workers)
        set_tf32(tf32)
        tnt_ms, where = tnt_fit(tnt, dev, images, labels, a, precision)
        if torch.device(where).type != dev.type:
            raise SystemExit(f"resnet_overhead: tnt.Model trained on {where}, not on {dev.type}: "
                             "the ratio would compare two devices (launch without --no-gpu, "
                             "with the GPU visible)")
        if tf32_now() != tf32:
            notes.append(f"tnt.Model.fit left TF32 (matmul, cudnn) at {tf32_now()}, "
                         f"set to {tf32} before each run")
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        row = {"precision": precision, "resident_ms": round(resident_ms, 2),
               "loader_ms": round(loader_ms, 2), "tnt_ms": round(tnt_ms, 2),
               "tnt_over_loader": round(tnt_ms / loader_ms, 3), "tnt_device": where,
               "loader_workers": workers,
               "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu (dry run)",
               "torch": torch.__version__,
               "tf32": {"setting": a.tf32, "matmul": tf32[0], "cudnn": tf32[1]},
               "batch": b, "steps": a.steps, "warmup": a.warmup}
        print("RESULT " + json.dumps(row), flush=True)
        rows.append(row)
    print(f"\n| ResNet-18, batch {b}, {rows[0]['gpu']} | plain, batch resident on the device (ms) "
          "| plain, DataLoader (ms) | tnt.Model.fit (ms) | tnt / DataLoader |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['precision']} | {r['resident_ms']} | {r['loader_ms']} | {r['tnt_ms']} | "
              f"{r['tnt_over_loader']} |")
    print(f"\nMean of {a.steps} steps after {a.warmup} warm-up, the same batches for all three. "
          f"DataLoader: TensorDataset over the host tensors, batch_size={b}, "
          f"num_workers={workers}, prefetch_factor={prefetch if workers else None}, "
          f"pin_memory={dev.type == 'cuda'}, "
          f".to(device, non_blocking=True). tnt: one fit, timed from batch {a.warmup} to the "
          f"epoch's end by a callback without batch logs. "
          f"TF32 {a.tf32} (matmul {tf32[0]}, cuDNN {tf32[1]}) for every run. "
          "fp16: autocast + GradScaler against mixed_precision='float16'. "
          "Goal: tnt / DataLoader <= 1.03.")
    for note in dict.fromkeys(notes):
        print(f"Note: {note}")


if __name__ == "__main__":
    main()
