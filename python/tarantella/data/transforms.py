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
from __future__ import annotations

from typing import Iterable, Tuple

from .._tarantella import transforms as _t

Transform = _t.Transform
IMAGENET_MEAN = list(_t.IMAGENET_MEAN)
IMAGENET_STD = list(_t.IMAGENET_STD)

__all__ = ["Transform", "IMAGENET_MEAN", "IMAGENET_STD", "compose", "resize", "center_crop",
           "random_resized_crop", "random_horizontal_flip", "to_float", "normalize"]


def compose(steps: Iterable[_t.Transform]) -> _t.Transform:
    """The transforms applied in order, all drawing from the same generator.

    Args:
        steps: The transforms.

    Returns:
        One transform.
    """
    return _t.compose(list(steps))


def resize(shorter_side: int) -> _t.Transform:
    """Scales the image so that its shorter side is `shorter_side`.

    The longer side becomes floor(shorter_side * long / short), as torchvision.

    Args:
        shorter_side: In pixels.

    Returns:
        The transform.
    """
    return _t.resize(shorter_side)


def center_crop(size: int) -> _t.Transform:
    """The central size x size square; the image must be at least that large.

    Args:
        size: In pixels.

    Returns:
        The transform.
    """
    return _t.center_crop(size)


def random_resized_crop(size: int, scale: Tuple[float, float] = (0.08, 1.0),
                        ratio: Tuple[float, float] = (3 / 4, 4 / 3)) -> _t.Transform:
    """torchvision's RandomResizedCrop.

    Args:
        size: The output is size x size.
        scale: The box's share of the area, drawn uniformly in this range.
        ratio: The box's aspect ratio, drawn log-uniformly in this range.

    Returns:
        The transform.
    """
    return _t.random_resized_crop(size, (scale[0], scale[1]), (ratio[0], ratio[1]))


def random_horizontal_flip(p: float = 0.5) -> _t.Transform:
    """Mirrors the image left-right with probability p.

    Args:
        p: The probability.

    Returns:
        The transform.
    """
    return _t.random_horizontal_flip(p)


def to_float() -> _t.Transform:
    """uint8 [C, H, W] -> float32 in [0, 1]; floating images pass.

    Returns:
        The transform.
    """
    return _t.to_float()


def normalize(mean: Iterable[float], std: Iterable[float]) -> _t.Transform:
    """(x - mean[c]) / std[c] per channel; the image must be float.

    Args:
        mean: Per channel.
        std: Per channel.

    Returns:
        The transform.
    """
    return _t.normalize(list(mean), list(std))
