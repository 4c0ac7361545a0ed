"""Plain PyTorch, one thread: the MLP of stages_bench.cpp trained on a batch of 256
as 1 or 8 micro-batches with gradients accumulated in .grad; what micro-batching
itself costs on this machine, without tarantella (docs/perf-log/2026-11-stages.md).

    /usr/bin/python3 bench/stages/accumulate.py
"""
import torch, time
torch.set_num_threads(1)
torch.manual_seed(0)
layers=[]
for i in range(8): layers += [torch.nn.Linear(1024,1024), torch.nn.ReLU()]
net=torch.nn.Sequential(*layers)
opt=torch.optim.SGD(net.parameters(), lr=0.001)
x=torch.randn(256,1024); y=torch.randn(256,1024)
def step(m):
    opt.zero_grad()
    for c in range(m):
        xs=x[c*256//m:(c+1)*256//m]; ys=y[c*256//m:(c+1)*256//m]
        (torch.nn.functional.mse_loss(net(xs), ys)*(len(xs)/256)).backward()
    opt.step()
for m in (1,8):
    for _ in range(2): step(m)
    t=time.time(); n=8
    for _ in range(n): step(m)
    print(m, 256*n/(time.time()-t), "samples/s")
