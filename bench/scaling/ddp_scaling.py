#!/usr/bin/python3
"""The PyTorch peer of scaling_bench.cpp: the same networks, data and global
batch, trained with DistributedDataParallel (gloo) by one process per
simulated host, each started inside its host's namespace by run.sh:

    cluster.sh exec 0 /usr/bin/python3 ddp_scaling.py --rank 0 --world-size 2 \\
        --master-addr 10.77.77.11 --model mlp --batch-size 256 --steps 8

torch.distributed is initialised through its TCP store at MASTER_ADDR (host
0's address); gloo talks over the host's one interface (eth0). Each process
trains its contiguous share of every global batch, one intra-op thread.
Prints on rank 0 one line:  RESULT {json}  with the wall time of every step.
"""
import argparse
import json
import os
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train_step"))
from ddp_bench import Mlp, synthetic_data as mlp_data  # noqa: E402  (bench/train_step)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Module):
    """As resnet18.h: torchvision's ResNet-18 with 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for s, width in enumerate([64, 128, 256, 512]):
            layers.append(nn.Sequential(BasicBlock(cin, width, 1 if s == 0 else 2),
                                        BasicBlock(width, width, 1)))
            cin = width
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def synthetic_data(model, n, seed):
    """As scaling_bench.cpp: same generator, same order."""
    if model == "mlp":
        return mlp_data("mlp", n, seed)
    torch.manual_seed(seed)
    return torch.randn(n, 3, 32, 32), torch.randint(0, 10, (n,), dtype=torch.long)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["mlp", "resnet18"], default="mlp")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--master-addr", required=True)
    p.add_argument("--master-port", type=int, default=29517)
    p.add_argument("--batch-size", type=int, default=256, help="global batch size")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--distinct-batches", type=int, default=4)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")  # the host's one link
    dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.master_port}",
                            rank=args.rank, world_size=args.world_size,
                            timeout=timedelta(seconds=120))
    x, y = synthetic_data(args.model, args.batch_size * args.distinct_batches, args.seed)
    torch.manual_seed(args.seed + 1)
    net = nn.parallel.DistributedDataParallel(Mlp() if args.model == "mlp" else ResNet18())
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    base, extra = divmod(args.batch_size, args.world_size)
    lo = args.rank * base + min(args.rank, extra)
    hi = lo + base + (1 if args.rank < extra else 0)
    marks = []
    for step in range(args.steps):
        marks.append(time.perf_counter())
        first = (step % args.distinct_batches) * args.batch_size
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x[first + lo:first + hi]), y[first + lo:first + hi])
        loss.backward()
        optimizer.step()
    marks.append(time.perf_counter())
    if args.rank == 0:
        print("RESULT " + json.dumps({
            "variant": "ddp", "model": args.model, "batch": args.batch_size,
            "ranks": args.world_size, "threads": torch.get_num_threads(),
            "parameters": sum(q.numel() for q in net.parameters()), "host": socket.gethostname(),
            "step_ms": [round((b - a) * 1e3, 3) for a, b in zip(marks, marks[1:])]}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
