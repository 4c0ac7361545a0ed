#!/usr/bin/python3
"""The PyTorch peer of train_step_bench.cpp: the same networks, data, batch
and timing, trained with DistributedDataParallel (gloo) on N processes of
Debian's python3-torch, one intra-op thread each.

Each process takes its contiguous share of every global batch (what
tarantella's distribution does for an even split), DDP averages gradients
over the processes. The first epoch is warm-up and is not counted; samples/s
is of the whole job. Prints one line on rank 0:  RESULT {json}

    /usr/bin/python3 bench/train_step/ddp_bench.py --model mlp --nproc 2
"""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 4096)
        self.fc2 = nn.Linear(4096, 4096)
        self.fc3 = nn.Linear(4096, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def synthetic_data(model, n, seed):
    """As tnt_bench::synthetic_data (models.h): same generator, same order."""
    torch.manual_seed(seed)
    x = torch.randn(n, 1, 28, 28) if model == "lenet" else torch.randn(n, 784)
    y = torch.randint(0, 10, (n,), dtype=torch.long)
    return x, y


def blas_libraries():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line and "/" in line}
    return ", ".join(sorted(os.path.realpath(p) for p in paths))


def worker(rank, args, init_method):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank,
                            world_size=args.nproc)
    x, y = synthetic_data(args.model, args.batch_size * args.steps, args.seed)
    torch.manual_seed(args.seed + 1)
    net = DDP(LeNet5() if args.model == "lenet" else Mlp())
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=args.learning_rate)
    # This rank's contiguous run of every global batch (first B mod N ranks
    # one sample more), as tarantella splits it.
    base, extra = divmod(args.batch_size, args.nproc)
    lo = rank * base + min(rank, extra)
    hi = lo + base + (1 if rank < extra else 0)
    epoch_s = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        for step in range(args.steps):
            first = step * args.batch_size
            xb, yb = x[first + lo:first + hi], y[first + lo:first + hi]
            optimizer.zero_grad()
            loss = F.cross_entropy(net(xb), yb)
            loss.backward()
            optimizer.step()
        epoch_s.append(time.perf_counter() - start)
    if rank == 0:
        counted = sum(epoch_s[1:])
        samples = args.batch_size * args.steps * (args.epochs - 1)
        print("RESULT " + json.dumps({
            "variant": "ddp", "model": args.model, "ranks": args.nproc,
            "threads": torch.get_num_threads(), "samples_per_s": samples / counted,
            "epoch_s": [round(s, 4) for s in epoch_s],
            "checksum": [round(x.sum().item(), 6), int(y.sum().item())],
            "blas": blas_libraries()}), flush=True)
    dist.destroy_process_group()


DDP = nn.parallel.DistributedDataParallel


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["lenet", "mlp"], default="lenet")
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=20, help="global batches per epoch")
    p.add_argument("--epochs", type=int, default=3, help="epochs, the first one not counted")
    p.add_argument("--learning-rate", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    if args.epochs < 2:
        p.error(f"--epochs {args.epochs}: need at least 2 (the first is warm-up)")
    init_method = f"tcp://127.0.0.1:{free_port()}"
    mp.spawn(worker, args=(args, init_method), nprocs=args.nproc, join=True)


if __name__ == "__main__":
    main()
