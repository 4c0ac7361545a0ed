"""tnt.data's image sources, tar shards and seeded transforms from Python: the
C++ pipeline's, so the tensors are the same at any rank count (this file runs
at 1-4 ranks) and between a folder and its shards."""
import numpy as np
import pytest
import torch
from PIL import Image

import tarantella as tnt
from tarantella.data import transforms as T

CLASSES = ["cat", "dog", "eel"]


@pytest.fixture
def folder(tmp_path):
    """9 images (3 per class, JPEG and PNG, 40-60 x 30-50 pixels), the same
    files on every rank (each rank writes its own copy)."""
    rng = np.random.default_rng(7)
    for label, name in enumerate(CLASSES):
        (tmp_path / name).mkdir()
        for i in range(3):
            h, w = 30 + 10 * i, 40 + 10 * label
            pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            ext = "png" if i == 1 else "jpg"
            Image.fromarray(pixels).save(tmp_path / name / f"img{i}.{ext}")
    return tmp_path


def pass_of(ds, epoch=0):
    return [tuple(t.clone() for t in e) for e in ds.iterate(epoch)]


def augment(ds):
    return ds.map_seeded(T.compose([T.random_resized_crop(24), T.random_horizontal_flip(),
                                    T.to_float(), T.normalize(T.IMAGENET_MEAN, T.IMAGENET_STD)]),
                         seed=11, num_workers=2)


def test_folder_lists_classes_and_decodes_images(folder):
    paths, labels, classes = tnt.data.list_image_folder(folder)
    assert classes == CLASSES
    assert labels == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert paths[1].endswith("cat/img1.png")
    elements = pass_of(tnt.data.from_image_folder(folder, num_workers=2))
    assert len(elements) == 9
    image, label = elements[4]  # dog/img1.png: lossless, so the exact pixels
    assert image.dtype == torch.uint8 and image.shape == (3, 40, 50)
    assert label.item() == 1
    written = torch.from_numpy(np.array(Image.open(paths[4]))).permute(2, 0, 1)
    assert torch.equal(image, written)


def test_augmentation_is_the_same_at_any_rank_count(folder, rank, size):
    """This rank's micro-batches of the distributed pass are the slices of the
    serial pass: the same tensors at 1-4 ranks."""
    ds = augment(tnt.data.from_image_folder(folder)).batch(6)
    serial = pass_of(ds)
    assert serial[0][0].shape == (6, 3, 24, 24) and serial[0][0].dtype == torch.float32
    mine = [tuple(t.clone() for t in b) for b in tnt.data.distribute(ds).iterate(0)]
    assert len(serial) == len(mine) == 2
    for batch, (x, y) in zip(serial, mine):
        lo, hi = tnt.data.micro_batch_range(batch[0].shape[0], size, rank)
        assert torch.equal(x, batch[0][lo:hi]) and torch.equal(y, batch[1][lo:hi])
    assert not torch.equal(pass_of(ds, 1)[0][0], serial[0][0])  # another epoch draws anew
    assert all(torch.equal(a[0], b[0]) for a, b in zip(pass_of(ds), serial))  # repeatable


def test_shards_give_the_folders_tensors(folder, tmp_path_factory):
    paths, labels, _ = tnt.data.list_image_folder(folder)
    prefix = tmp_path_factory.mktemp("shards") / "train"
    shards = tnt.data.pack_image_shards(paths, labels, prefix, samples_per_shard=4)
    assert [s[-len("-000000.tar"):] for s in shards] == ["-000000.tar", "-000001.tar",
                                                         "-000002.tar"]
    from_folder = pass_of(augment(tnt.data.from_image_folder(folder)))
    from_shards = pass_of(augment(tnt.data.from_image_shards(shards, num_workers=2)))
    assert len(from_shards) == 9
    for a, b in zip(from_folder, from_shards):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert tnt.data.index_image_shard(shards[0]).startswith(shards[0])


def test_evaluation_transforms_and_trying_a_transform_out():
    image = torch.arange(3 * 10 * 20, dtype=torch.float32).reshape(3, 10, 20)
    (out,) = T.compose([T.resize(8), T.center_crop(8)])(image)
    assert out.shape == (3, 8, 8)
    (flipped, label) = T.random_horizontal_flip(p=1.0)((image, torch.tensor(5)))
    assert torch.equal(flipped, image.flip(-1)) and label.item() == 5


def test_bad_inputs_name_the_value_and_the_fix(tmp_path):
    with pytest.raises(tnt.Error, match=str(tmp_path / "missing")):
        tnt.data.from_image_folder(tmp_path / "missing")
    with pytest.raises(tnt.Error, match="center_crop"):
        T.center_crop(64)(torch.zeros(3, 10, 10, dtype=torch.uint8))
    with pytest.raises(TypeError):
        tnt.data.Dataset.range(0, 3).map_seeded(lambda x: x)  # a Python callable: use map
    bad = tmp_path / "bad" / "cat"
    bad.mkdir(parents=True)
    (bad / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    with pytest.raises(tnt.Error, match="broken.jpg"):
        pass_of(tnt.data.from_image_folder(tmp_path / "bad"))


def test_skip_drops_bad_files_and_keeps_the_labels_of_the_good(folder, rank, size):
    """on_error="skip": a damaged file is left out of its batch, never paired
    with another sample's label; the micro-batches of every rank are the
    slices of the serial batches; a bad on_error value is a ValueError."""
    paths, labels, _ = tnt.data.list_image_folder(folder)
    (folder / "cat" / "img2.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    (folder / "eel" / "img1.png").write_bytes(b"\x89PNG\r\n\x1a\n cut short")
    good = [i for i in range(9) if i not in (2, 7)]

    def crop(ds):
        return ds.map_seeded(T.compose([T.resize(16), T.center_crop(16)]))

    ds = tnt.data.from_image_folder(folder, on_error="skip")
    assert ds.may_skip_samples()
    got = pass_of(crop(ds))
    want = pass_of(crop(tnt.data.from_image_files([paths[i] for i in good],
                                                  [labels[i] for i in good])))
    assert len(got) == 7 and ds.samples_skipped() == 2
    for (gi, gl), (wi, wl) in zip(got, want):
        assert torch.equal(gi, wi) and gl.item() == wl.item()
    serial = pass_of(crop(ds).batch(4))
    assert [b[0].shape[0] for b in serial] == [3, 3, 1]  # positions 0-3, 4-7, 8
    mine = [tuple(t.clone() for t in b) for b in tnt.data.distribute(crop(ds).batch(4)).iterate(0)]
    assert len(mine) == 3  # every rank runs every step
    for k, batch in enumerate(mine):
        first, length = 4 * k, min(4, 9 - 4 * k)
        lo, hi = tnt._tarantella.micro_batch_range(length, size, rank)
        kept = [p for p in range(first, first + length) if p in good]  # serial rows
        rows = [j for j, p in enumerate(kept) if first + lo <= p < first + hi]
        assert batch[0].shape[1:] == (3, 16, 16)  # an empty share keeps its shapes
        for t in (0, 1):
            assert torch.equal(batch[t], serial[k][t][rows])
    with pytest.raises(tnt.Error, match="img2.jpg"):
        pass_of(tnt.data.from_image_folder(folder))
    with pytest.raises(ValueError, match="'raise'.*'skip'"):
        tnt.data.from_image_files(paths, labels, on_error="ignore")


def test_the_own_loop_refuses_a_dataset_that_skips(folder):
    """A DistributedOptimizer weights by the loader's n_r / B, and B is not
    known on one rank when bad samples are skipped: it refuses at the first
    backward instead of weighting by the nominal size."""
    (folder / "cat" / "img2.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    ds = tnt.data.from_image_folder(folder, on_error="skip").map_seeded(
        T.compose([T.resize(4), T.center_crop(4), T.to_float()])).batch(6)
    dist = tnt.data.distribute(ds)
    model = torch.nn.Linear(48, 3)
    opt = tnt.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), loader=dist)
    images, labels = next(iter(dist))
    with pytest.raises(Exception, match="skips bad samples"):
        torch.nn.functional.cross_entropy(model(images.reshape(len(images), -1)), labels).backward()
        opt.step()
