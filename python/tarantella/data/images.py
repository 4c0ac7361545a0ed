"""Image folders and tar shards of the C++ library, as tnt.data.Dataset.

    ds = tnt.data.from_image_folder("imagenet/train", num_workers=4)   # (uint8 [3, H, W], int64)
    shards = tnt.data.pack_image_shards(*tnt.data.list_image_folder("imagenet/train")[:2],
                                        prefix="/scratch/train", samples_per_shard=1000)
    ds = tnt.data.from_image_shards(shards, num_workers=4)

JPEG through libjpeg-turbo, PNG through libpng. Files are opened and decoded
when their element is read, so under distribution each rank decodes only its
own samples of every global batch. Errors name the file (and the shard
member). With on_error="skip", a sample whose file or member cannot be read
or decoded is dropped instead, with one warning naming it; fit() weights
each step by the samples that remain and reports the count per epoch.
A missing shard or a stale index stays an error.
"""
from __future__ import annotations

import os
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from .. import _tarantella as _c

__all__ = ["list_image_folder", "from_image_folder", "from_image_files", "from_image_shards",
           "pack_image_shards", "index_image_shard"]

#: A file or folder name.
Path = Union[str, "os.PathLike[str]"]


def list_image_folder(dir: Path, classes: Optional[Sequence[str]] = None
                      ) -> Tuple[List[str], List[int], List[str]]:
    """Lists an ImageNet-layout folder (one sub-folder per class).

    Sorted by class, then file name: the same on every rank.

    Args:
        dir: The folder.
        classes: The class names (e.g. the training folder's): every
            sub-folder must be one of them and keeps its label. Default: the
            sub-folders, sorted.

    Returns:
        (paths, labels, classes).
    """
    return _c.list_image_folder(os.fspath(dir), list(classes or []))


def from_image_folder(dir: Path, num_workers: int = 1, decode_short_side: int = 0,
                      classes: Optional[Sequence[str]] = None,
                      on_error: str = "raise") -> _c.Dataset:
    """The images of list_image_folder(dir), decoded when read.

    Args:
        dir: The folder.
        num_workers: Threads that decode the images of one request (a micro-batch).
        decode_short_side: > 0: decode JPEGs at the smallest DCT scale that
            keeps the shorter side at least that long (for resize + center
            crop; leave 0 for random_resized_crop).
        classes: As in list_image_folder.
        on_error: "raise" (a bad image is an error naming the file) or "skip"
            (it is dropped with one warning).

    Returns:
        A Dataset of (image uint8 [3, H, W], label int64).

    Raises:
        ValueError: `on_error` is neither "raise" nor "skip".
    """
    return _c.from_image_folder(os.fspath(dir), num_workers, decode_short_side,
                                list(classes or []), on_error)


def from_image_files(paths: Iterable[Path], labels: Iterable[int], num_workers: int = 1,
                     decode_short_side: int = 0, on_error: str = "raise") -> _c.Dataset:
    """Element i is (paths[i] decoded, labels[i]).

    Args:
        paths: The image files.
        labels: Their labels.
        num_workers: As in from_image_folder.
        decode_short_side: As in from_image_folder.
        on_error: As in from_image_folder.

    Returns:
        A Dataset of (image uint8 [3, H, W], label int64).

    Raises:
        ValueError: `on_error` is neither "raise" nor "skip".
    """
    return _c.from_image_files([os.fspath(p) for p in paths], [int(l) for l in labels],
                               num_workers, decode_short_side, on_error)


def from_image_shards(shards: Iterable[Path], num_workers: int = 1, decode_short_side: int = 0,
                      build_index: bool = True, on_error: str = "raise") -> _c.Dataset:
    """The samples of WebDataset-style tar shards, in shard order, then member order.

    Each shard holds an image member and a .cls label per key. Each shard's
    index (beside it) makes them random access.

    Args:
        shards: The tar files.
        num_workers: As in from_image_folder.
        decode_short_side: As in from_image_folder.
        build_index: Rebuild a missing or stale index (False: an error).
        on_error: "skip" drops a damaged image member with a warning; a
            missing shard or a stale index stays an error.

    Returns:
        A Dataset of (image uint8 [3, H, W], label int64).

    Raises:
        ValueError: `on_error` is neither "raise" nor "skip".
    """
    return _c.from_image_shards([os.fspath(s) for s in shards], num_workers, decode_short_side,
                                build_index, on_error)


def pack_image_shards(paths: Iterable[Path], labels: Iterable[int], prefix: Path,
                      samples_per_shard: int) -> List[str]:
    """Packs images into `<prefix>-000000.tar`, ... with their indexes.

    The same as the `tnt-pack-shards` command.

    Args:
        paths: The image files.
        labels: Their labels.
        prefix: The shards' path prefix.
        samples_per_shard: Images per shard.

    Returns:
        The shard paths.
    """
    return _c.pack_image_shards([os.fspath(p) for p in paths], [int(l) for l in labels],
                                os.fspath(prefix), samples_per_shard)


def index_image_shard(shard: Path) -> str:
    """Builds (or rebuilds) the index beside `shard`.

    Args:
        shard: The tar file.

    Returns:
        The index's path.
    """
    return _c.index_image_shard(os.fspath(shard))
