#!/usr/bin/env python3
"""torchvision's results for torchvision_compare_test.cpp.

Reads a uint8 CHW image (raw bytes) and, for seeds 0..N-1, seeds torch's
global generator and runs torchvision's RandomResizedCrop(16, antialias=True),
RandomHorizontalFlip, ConvertImageDtype(float) and Normalize (ImageNet). It
writes one line "seed top left height width" per seed (the crop box from
RandomResizedCrop.get_params under the same seed) to OUT.txt and the float32
results, concatenated, to OUT.bin; then Resize(13) + CenterCrop(11) of the
uint8 image to OUT_resize.bin. Exit 3 when torchvision is missing.

    torchvision_reference.py IN.bin CHANNELS HEIGHT WIDTH SEEDS OUT
"""
import sys

try:
    import torch
    import torchvision.transforms as T
except ImportError as e:
    print(f"torchvision missing: {e}")
    sys.exit(3)


def main():
    path, c, h, w, seeds, out = sys.argv[1:7]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    img = torch.frombuffer(data, dtype=torch.uint8).reshape(int(c), int(h), int(w))
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    train = T.Compose([T.RandomResizedCrop(16, antialias=True), T.RandomHorizontalFlip(),
                       T.ConvertImageDtype(torch.float), T.Normalize(mean, std)])
    with open(out + ".txt", "w") as boxes, open(out + ".bin", "wb") as results:
        for seed in range(int(seeds)):
            torch.manual_seed(seed)
            box = T.RandomResizedCrop.get_params(img, [0.08, 1.0], [3.0 / 4.0, 4.0 / 3.0])
            boxes.write(" ".join(str(v) for v in (seed, *box)) + "\n")
            torch.manual_seed(seed)
            results.write(train(img).contiguous().numpy().tobytes())
    evaluation = T.Compose([T.Resize(13, antialias=True), T.CenterCrop(11)])
    with open(out + "_resize.bin", "wb") as f:
        f.write(evaluation(img).contiguous().numpy().tobytes())


if __name__ == "__main__":
    main()
