#!/usr/bin/env python3
"""torchvision's results for torchvision_compare_test.cpp.

Reads a uint8 CHW image (raw bytes) as a PIL image and, for seeds 0..N-1,
seeds torch's global generator and runs torchvision's RandomResizedCrop(16),
RandomHorizontalFlip, ToTensor and Normalize (ImageNet): the PIL path that
ImageFolder takes. It writes one line "seed top left height width" per seed
(the crop box from RandomResizedCrop.get_params under the same seed) to
OUT.txt and the float32 results, concatenated, to OUT.bin; the same chain on
the uint8 tensor (torchvision's tensor path, antialias=True) to
OUT_tensor.bin; then Resize(13) + CenterCrop(11) of the PIL image, as uint8
CHW, to OUT_resize.bin, and PIL's own bilinear resize to each size of
SIZES (below) to OUT_sizes.bin. Exit 3 when torchvision or PIL is missing.

    torchvision_reference.py IN.bin CHANNELS HEIGHT WIDTH SEEDS OUT
"""
import sys

try:
    import torch
    import torchvision.transforms as T
    from PIL import Image
except ImportError as e:
    print(f"torchvision missing: {e}")
    sys.exit(3)

# (height, width) of the 29x37 test image: both axes down, both up, one axis
# only (each way), and mixed.
SIZES = [(16, 16), (40, 51), (29, 10), (7, 37), (58, 9), (1, 1), (29, 37)]


def main():
    path, c, h, w, seeds, out = sys.argv[1:7]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    img = torch.frombuffer(data, dtype=torch.uint8).reshape(int(c), int(h), int(w))
    pil = Image.fromarray(img.permute(1, 2, 0).contiguous().numpy(), "RGB")
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    train = T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize(mean, std)])
    tensor_train = T.Compose([T.RandomResizedCrop(16, antialias=True), T.RandomHorizontalFlip(),
                              T.ConvertImageDtype(torch.float), T.Normalize(mean, std)])
    with open(out + ".txt", "w") as boxes, open(out + ".bin", "wb") as results, \
            open(out + "_tensor.bin", "wb") as tensor_results:
        for seed in range(int(seeds)):
            torch.manual_seed(seed)
            box = T.RandomResizedCrop.get_params(pil, [0.08, 1.0], [3.0 / 4.0, 4.0 / 3.0])
            boxes.write(" ".join(str(v) for v in (seed, *box)) + "\n")
            torch.manual_seed(seed)
            results.write(train(pil).contiguous().numpy().tobytes())
            torch.manual_seed(seed)
            tensor_results.write(tensor_train(img).contiguous().numpy().tobytes())
    evaluation = T.Compose([T.Resize(13), T.CenterCrop(11), T.PILToTensor()])
    with open(out + "_resize.bin", "wb") as f:
        f.write(evaluation(pil).contiguous().numpy().tobytes())
    with open(out + "_sizes.bin", "wb") as f:
        for height, width in SIZES:
            f.write(T.PILToTensor()(pil.resize((width, height), Image.BILINEAR)).numpy().tobytes())

if __name__ == "__main__":
    main()
