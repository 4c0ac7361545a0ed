"""Writes a TorchScript model for the C++ tests: the twin of the Mlp in
model_test.cpp (fc1 6->16, tanh, fc2 16->4). Without python3-torch it says
so and writes nothing; the C++ test then skips with that reason."""
import sys

try:
    import torch
except ImportError:
    print("python3-torch is not installed: the TorchScript test will be skipped")
    sys.exit(0)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


torch.manual_seed(0)
torch.jit.script(Mlp()).save(sys.argv[1])
print("wrote", sys.argv[1])
