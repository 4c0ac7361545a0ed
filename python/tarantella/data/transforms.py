"""Seeded image transforms (tnt::data::transforms), for Dataset.map_seeded.

    from tarantella.data import transforms as T
    train = (tnt.data.from_image_folder("imagenet/train", num_workers=4)
             .map_seeded(T.compose([T.random_resized_crop(224), T.random_horizontal_flip(),
                                    T.to_float(), T.normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]),
                         seed=42, num_workers=4)
             .batch(256))

Each acts on the image, the first tensor of an element ([C, H, W], uint8 or
float), and passes the label through. They are C++ functions: the pipeline
runs them on its worker threads without the GIL. The random ones draw only
from the generator map_seeded hands them, seeded by (seed, epoch, position of
the sample), so a sample's tensor is the same at any rank count, any number
of workers and in a resumed run, and equal to the C++ library's. Resizing is
bilinear and antialiased when shrinking; a uint8 image is resized as Pillow
resizes it, bit for bit (torchvision's PIL path, ImageFolder's), a float
image by LibTorch's interpolation.
"""
from .._tarantella import transforms as _t

Transform = _t.Transform
IMAGENET_MEAN = list(_t.IMAGENET_MEAN)
IMAGENET_STD = list(_t.IMAGENET_STD)

__all__ = ["Transform", "IMAGENET_MEAN", "IMAGENET_STD", "compose", "resize", "center_crop",
           "random_resized_crop", "random_horizontal_flip", "to_float", "normalize"]


def compose(steps):
    """The transforms applied in order, all drawing from the same generator."""
    return _t.compose(list(steps))


def resize(shorter_side):
    """Scales the image so that its shorter side is `shorter_side` (the longer
    side floor(shorter_side * long / short), as torchvision)."""
    return _t.resize(shorter_side)


def center_crop(size):
    """The central size x size square; the image must be at least that large."""
    return _t.center_crop(size)


def random_resized_crop(size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """torchvision's RandomResizedCrop: a box of `scale` of the area and aspect
    ratio in `ratio` (drawn log-uniformly), resized to size x size."""
    return _t.random_resized_crop(size, tuple(scale), tuple(ratio))


def random_horizontal_flip(p=0.5):
    """Mirrors the image left-right with probability p."""
    return _t.random_horizontal_flip(p)


def to_float():
    """uint8 [C, H, W] -> float32 in [0, 1]; floating images pass."""
    return _t.to_float()


def normalize(mean, std):
    """(x - mean[c]) / std[c] per channel; the image must be float."""
    return _t.normalize(list(mean), list(std))
