"""Fashion-MNIST with a PyTorch training loop, in the style of PyTorch's MNIST
example (pytorch/examples, mnist/main.py): mnist_loop.py is the plain loop,
mnist_loop_tnt.py its distributed twin, four lines apart (docs/python.md):

    /usr/bin/python3 examples/python/mnist_loop.py --epochs 1
    tarantella -n 4 -- /usr/bin/python3 examples/python/mnist_loop_tnt.py --epochs 1

The twin trains to the same weights as the plain loop at any rank count,
up to float rounding. Changes from PyTorch's example: the network has no
Dropout (dropout draws random numbers per rank, so a distributed run could
not match the serial one number for number); the optimizer is SGD with
momentum, as the example had it earlier (Adadelta at lr 1.0 amplifies float
rounding: the plain loop at 1 and 2 threads differs by 2e-3 after 5 steps);
and the data are the IDX files of Debian's dataset-fashion-mnist, read by a
small map-style Dataset.
"""
import argparse
import gzip
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
import tarantella as tnt
from tarantella.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class FashionMNIST(torch.utils.data.Dataset):
    """The IDX files (gzip) of /usr/share/datasets/fashion-mnist: sample i is
    (image float32 [1, 28, 28], normalized; label int64)."""

    def __init__(self, root, train):
        prefix = "train" if train else "t10k"
        images = self._read(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"))
        labels = self._read(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"))
        self.images = (torch.from_numpy(images).float().div(255).sub(0.2860).div(0.3530)
                       .unsqueeze(1))
        self.labels = torch.from_numpy(labels.astype(np.int64))

    @staticmethod
    def _read(path):
        with gzip.open(path, "rb") as f:
            data = f.read()
        dims = data[3]
        shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
        return np.frombuffer(bytearray(data), dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def train(args, model, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
        if args.max_steps and batch_idx + 1 >= args.max_steps:
            break


def test(args, model, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for batch_idx, (data, target) in enumerate(test_loader):
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()
            if args.max_steps and batch_idx + 1 >= args.max_steps:
                break

    test_loss, correct = tnt.sum_over_ranks((test_loss, correct))
    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return correct / len(test_loader.dataset)


def save(model, path):
    """Atomically: every rank of a distributed run writes the same weights."""
    tmp = f"{path}.{os.getpid()}.tmp"
    torch.save(model.state_dict(), tmp)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description='PyTorch Fashion-MNIST Example')
    parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                        help='input batch size for training (default: 64)')
    parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                        help='input batch size for testing (default: 1000)')
    parser.add_argument('--epochs', type=int, default=14, metavar='N',
                        help='number of epochs to train (default: 14)')
    parser.add_argument('--lr', type=float, default=0.01, metavar='LR',
                        help='learning rate (default: 0.01)')
    parser.add_argument('--momentum', type=float, default=0.5, metavar='M',
                        help='SGD momentum (default: 0.5)')
    parser.add_argument('--gamma', type=float, default=0.7, metavar='M',
                        help='Learning rate step gamma (default: 0.7)')
    parser.add_argument('--seed', type=int, default=1, metavar='S',
                        help='random seed (default: 1)')
    parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                        help='how many batches to wait before logging training status')
    parser.add_argument('--max-steps', type=int, default=0, metavar='N',
                        help='a quick check: stop each epoch and the test after N batches (default: 0, all)')
    parser.add_argument('--data', default='/usr/share/datasets/fashion-mnist',
                        help='directory of the Fashion-MNIST IDX files')
    parser.add_argument('--save-model', default='', metavar='PATH',
                        help='save the trained weights to PATH')
    args = parser.parse_args()

    torch.manual_seed(args.seed)

    train_kwargs = {'batch_size': args.batch_size, 'shuffle': True}
    test_kwargs = {'batch_size': args.test_batch_size}

    dataset1 = FashionMNIST(args.data, train=True)
    dataset2 = FashionMNIST(args.data, train=False)
    train_loader = DataLoader(dataset1, **train_kwargs)
    test_loader = DataLoader(dataset2, **test_kwargs)

    model = Net()
    optimizer = tnt.DistributedOptimizer(optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum))

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch)
        test(args, model, test_loader)
        scheduler.step()

    if args.save_model:
        save(model, args.save_model)


if __name__ == '__main__':
    main()
