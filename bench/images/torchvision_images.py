#!/usr/bin/env python3
"""torchvision's ImageFolder + DataLoader with the same transforms as
image_bench.cpp (RandomResizedCrop(224), flip, ToTensor, Normalize; batch
32), in images per wall-clock second and per CPU second (this process and
its worker processes). Also writes the generated folder: torchvision_images.py --make DIR N.

    torchvision_images.py DIR [WORKERS] [PASSES]
"""
import resource
import sys
import time

import torch
import torchvision.datasets as datasets
import torchvision.transforms as T


def make(dir_, n):
    import os
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    for i in range(n):
        cls = os.path.join(dir_, f"class{i % 4}")
        os.makedirs(cls, exist_ok=True)
        base = rng.integers(0, 255, (375 // 15 + 1, 500 // 20 + 1, 3), dtype=np.uint8)
        img = Image.fromarray(base).resize((500, 375), Image.BILINEAR)
        img.save(os.path.join(cls, f"{i:05d}.jpg"), quality=90)


def cpu_seconds():
    """CPU time of this process (all threads) and of its finished children:
    the DataLoader's worker processes are joined at the end of each pass."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main():
    if sys.argv[1] == "--make":
        make(sys.argv[2], int(sys.argv[3]))
        return
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    passes = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(1)
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(sys.argv[1], tf)
    # DataLoader's num_workers=0 is the calling process; ours counts the caller too.
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=True,
                                         num_workers=0 if workers <= 1 else workers)
    images, start, cpu_start = 0, time.perf_counter(), cpu_seconds()
    for _ in range(passes):
        for x, _ in loader:
            images += x.shape[0]
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    print(f"torchvision: {images / seconds:.1f} images/s, {images / cpu:.1f} images/cpu-s "
          f"({images} images, {workers} workers)")


if __name__ == "__main__":
    main()
