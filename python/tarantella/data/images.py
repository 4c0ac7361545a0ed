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
from .. import _tarantella as _c

__all__ = ["list_image_folder", "from_image_folder", "from_image_files", "from_image_shards",
           "pack_image_shards", "index_image_shard"]


def list_image_folder(dir, classes=None):
    """(paths, labels, classes) of an ImageNet-layout folder (one sub-folder per
    class), sorted by class, then file name: the same on every rank. With
    `classes` (e.g. the training folder's), every sub-folder must be one of
    them and keeps its label."""
    return _c.list_image_folder(str(dir), list(classes or []))


def from_image_folder(dir, num_workers=1, decode_short_side=0, classes=None, on_error="raise"):
    """Elements (image uint8 [3, H, W], label int64) of list_image_folder(dir).
    num_workers: threads that decode the images of one request (a micro-batch).
    decode_short_side > 0: decode JPEGs at the smallest DCT scale that keeps
    the shorter side at least that long (for resize + center crop; leave 0 for
    random_resized_crop). on_error: "raise" (default: a bad image is an error
    naming the file) or "skip" (it is dropped with one warning)."""
    return _c.from_image_folder(str(dir), num_workers, decode_short_side, list(classes or []),
                                on_error)


def from_image_files(paths, labels, num_workers=1, decode_short_side=0, on_error="raise"):
    """Element i is (paths[i] decoded, labels[i]); on_error as in from_image_folder."""
    return _c.from_image_files([str(p) for p in paths], [int(l) for l in labels], num_workers,
                               decode_short_side, on_error)


def from_image_shards(shards, num_workers=1, decode_short_side=0, build_index=True,
                      on_error="raise"):
    """The samples of WebDataset-style tar shards (an image member and a .cls
    label per key), in shard order, then member order. Each shard's index
    (beside it) makes them random access; a missing or stale index is rebuilt,
    or with build_index=False an error. on_error="skip" drops a damaged image
    member with a warning; a missing shard or a stale index stays an error."""
    return _c.from_image_shards([str(s) for s in shards], num_workers, decode_short_side,
                                build_index, on_error)


def pack_image_shards(paths, labels, prefix, samples_per_shard):
    """Packs images into `<prefix>-000000.tar`, ... with their indexes; returns
    the shard paths. The same as the `tnt-pack-shards` command."""
    return _c.pack_image_shards([str(p) for p in paths], [int(l) for l in labels], str(prefix),
                                samples_per_shard)


def index_image_shard(shard):
    """Builds (or rebuilds) the index beside `shard`; returns its path."""
    return _c.index_image_shard(str(shard))
