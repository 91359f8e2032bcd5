import os
import numpy as np
import pytest
from PIL import Image

from crsbench.datasets.base import Dataset, images_batch
from crsbench.datasets.folder import FolderDataset
from crsbench.datasets.image_files import FileImages, load_image
from crsbench.errors import DataError
from _image_files import save_image, write_csv


@pytest.fixture
def single_label_tree(tmp_path):
    """Twelve images (PNG and JPG, RGB and grey) of three classes, from six patients."""
    root = tmp_path / "images"
    rows = ["image,dx,patient"]
    for i in range(12):
        extension = ".png" if i % 2 else ".jpg"
        mode = "L" if i % 3 == 0 else "RGB"
        save_image(root / f"img{i:02d}{extension}", mode=mode, seed=i)
        rows.append(f"img{i:02d}{extension},{['nevus', 'melanoma', 'bcc'][i % 3]},p{i // 2}")
    csv = write_csv(tmp_path / "labels.csv", "\n".join(rows))
    return root, csv


def make_single(tree, **options):
    root, csv = tree
    return FolderDataset(root, csv, label_columns="dx", group_column="patient", **options)


# ----- well-formed folders


def test_single_label_folder(single_label_tree):
    dataset = make_single(single_label_tree)
    assert isinstance(dataset, Dataset)
    assert dataset.meta.class_names == ("bcc", "melanoma", "nevus")
    assert dataset.meta.name == "images"
    splits = [dataset.split(name) for name in ("train", "val", "test")]
    assert sum(len(s) for s in splits) == 12
    for split in splits:
        assert split.labels.dtype == np.int64
        assert len(split) == 0 or images_batch(split.images, range(len(split))).shape == (len(split), 30, 40, 3)
    # No patient in two splits.
    patients = [set(s.groups) for s in splits]
    assert not (patients[0] & patients[1] or patients[0] & patients[2] or patients[1] & patients[2])


def test_labels_match_the_csv(single_label_tree):
    dataset = make_single(single_label_tree)
    for name in ("train", "val", "test"):
        split = dataset.split(name)
        for image_id, label in zip(split.ids, split.labels):
            number = int(image_id[3:5])
            assert dataset.meta.class_names[label] == ["nevus", "melanoma", "bcc"][number % 3]


def test_split_seed_is_deterministic(single_label_tree):
    first, again = make_single(single_label_tree), make_single(single_label_tree)
    assert np.array_equal(first.assignment, again.assignment)


def test_given_class_names_fix_the_order(single_label_tree):
    dataset = make_single(single_label_tree, class_names=["nevus", "melanoma", "bcc"])
    assert dataset.meta.class_names == ("nevus", "melanoma", "bcc")


def test_split_column_and_extension_lookup(tmp_path):
    root = tmp_path / "imgs"
    for i in range(4):
        save_image(root / "sub" / f"case{i}.PNG" if i == 3 else root / "sub" / f"case{i}.jpg", seed=i)
    csv = write_csv(
        tmp_path / "l.csv",
        "file,grade,split\nsub/case0,0,train\nsub/case1,2,val\nsub/case2.jpg,1,test\nsub/case3,2,Train",
    )
    dataset = FolderDataset(root, csv, image_column="file", label_columns="grade", task_type="ordinal",
                            split_column="split", name="grades")
    assert dataset.meta.name == "grades" and dataset.meta.class_names == ("0", "1", "2")
    assert list(dataset.split("train").ids) == ["sub/case0", "sub/case3"]
    assert dataset.split("train").images.paths[1].name == "case3.PNG"
    assert list(dataset.split("val").labels) == [2]


def test_ordinal_grades_are_shifted_to_start_at_zero(tmp_path):
    root = tmp_path / "imgs"
    rows = ["image,grade"]
    for i, grade in enumerate([1, 3, 4, 1, 3]):
        save_image(root / f"{i}.png", seed=i)
        rows.append(f"{i}.png,{grade}")
    dataset = FolderDataset(root, write_csv(tmp_path / "l.csv", "\n".join(rows)), label_columns="grade",
                            task_type="ordinal")
    assert dataset.meta.class_names == ("1", "2", "3", "4")
    assert sorted(dataset.labels.tolist()) == [0, 0, 2, 2, 3]


def test_integer_class_names_sort_numerically(tmp_path):
    root = tmp_path / "imgs"
    rows = ["image,label"]
    for i, label in enumerate([10, 9, 2, 10]):
        save_image(root / f"{i}.png", seed=i)
        rows.append(f"{i}.png,{label}")
    dataset = FolderDataset(root, write_csv(tmp_path / "l.csv", "\n".join(rows)))
    assert dataset.meta.class_names == ("2", "9", "10")


def test_multi_label_folder_masks_blanks(tmp_path):
    root = tmp_path / "imgs"
    rows = ["image,effusion,nodule,mass"]
    values = ["1,0,0", "0,,1", "1,1,1", "0,0,0", "0,1,", "1.0,0.0,0"]
    for i, value in enumerate(values):
        save_image(root / f"x{i}.png", mode="L", seed=i)
        rows.append(f"x{i}.png,{value}")
    dataset = FolderDataset(root, write_csv(tmp_path / "l.csv", "\n".join(rows)),
                            label_columns=["effusion", "nodule", "mass"], task_type="multi_label")
    assert dataset.meta.task_type == "multi_label"
    assert dataset.meta.class_names == ("effusion", "nodule", "mass")
    assert dataset.labels.dtype == np.float32 and dataset.labels.shape == (6, 3)
    assert np.isnan(dataset.labels[1, 1]) and np.isnan(dataset.labels[4, 2])
    assert np.nansum(dataset.labels) == 7


# ----- images


def test_images_decode_at_their_own_size_with_grey_replicated(tmp_path):
    """No stored copy at one size: each encoder's resize starts from the file's own pixels."""
    wide = np.zeros((20, 60), np.uint8)
    wide[:, 20:40] = 255
    Image.fromarray(wide, mode="L").save(tmp_path / "wide.png")
    image = load_image(tmp_path / "wide.png")
    assert image.shape == (20, 60, 3) and image.dtype == np.uint8
    assert np.array_equal(image[..., 0], image[..., 1]) and np.array_equal(image[..., 0], wide)


def test_max_side_only_ever_shrinks(tmp_path):
    save_image(tmp_path / "tiny.jpg", size=(5, 7), value=128)
    assert load_image(tmp_path / "tiny.jpg", 32).shape == (7, 5, 3)  # never upsampled
    save_image(tmp_path / "big.png", size=(90, 60), value=77)
    capped = load_image(tmp_path / "big.png", 30)
    assert capped.shape == (20, 30, 3) and abs(int(capped.mean()) - 77) <= 1


def test_a_large_jpeg_is_decoded_at_a_coarser_dct_scale_but_never_below_the_cap(tmp_path):
    save_image(tmp_path / "huge.jpg", size=(800, 600), value=90)
    capped = load_image(tmp_path / "huge.jpg", 100)
    assert capped.shape == (75, 100, 3) and abs(int(capped.mean()) - 90) <= 2


def test_sixteen_bit_png_is_scaled_not_clipped(tmp_path):
    Image.fromarray(np.full((8, 8), 32768, np.uint16)).save(tmp_path / "xray16.png")
    image = load_image(tmp_path / "xray16.png", 4)
    assert abs(int(image[0, 0, 0]) - 128) <= 1


def test_file_images_batch(tmp_path):
    paths = [save_image(tmp_path / f"{i}.png", seed=i) for i in range(3)]
    images = FileImages(paths)
    assert len(images) == 3
    assert images.batch([2, 0]).shape == (2, 30, 40, 3)  # one size: stacked
    assert np.array_equal(images.batch([2])[0], images[2])
    assert images.batch([]) == []
    other = save_image(tmp_path / "other.png", size=(10, 20))
    mixed = FileImages([paths[0], other]).batch([0, 1])
    assert isinstance(mixed, list) and [m.shape for m in mixed] == [(30, 40, 3), (20, 10, 3)]


def test_truncated_image_fails_when_loaded_naming_the_file(single_label_tree):
    root, _ = single_label_tree
    broken = root / "img03.png"
    broken.write_bytes(broken.read_bytes()[:60])
    dataset = make_single(single_label_tree)  # building does not decode images
    split = next(s for s in (dataset.split(n) for n in ("train", "val", "test")) if "img03.png" in s.ids)
    position = list(split.ids).index("img03.png")
    with pytest.raises(DataError, match="img03.png: cannot read image"):
        split.images.batch([position])


def test_not_an_image_fails_naming_the_file(tmp_path):
    (tmp_path / "notes.png").write_text("not a picture")
    with pytest.raises(DataError, match="notes.png: cannot read image"):
        load_image(tmp_path / "notes.png", 8)


# ----- fingerprint


def test_fingerprint_follows_csv_images_and_options(single_label_tree):
    root, csv = single_label_tree
    base = make_single(single_label_tree).fingerprint()
    assert make_single(single_label_tree).fingerprint() == base
    assert make_single(single_label_tree, split_seed=1).fingerprint() != base
    save_image(root / "img05.png", size=(50, 30), seed=99)  # a different file size
    assert make_single(single_label_tree).fingerprint() != base
    csv.write_text(csv.read_text().replace("p0", "p00"))
    assert make_single(single_label_tree).fingerprint() != base


# ----- bad input, one line naming the file, row or field


def test_missing_root(tmp_path, single_label_tree):
    _, csv = single_label_tree
    with pytest.raises(DataError, match="image folder not found: .*nowhere"):
        FolderDataset(tmp_path / "nowhere", csv)


def test_missing_csv(tmp_path, single_label_tree):
    root, _ = single_label_tree
    with pytest.raises(DataError, match="labels CSV not found: .*absent.csv"):
        FolderDataset(root, tmp_path / "absent.csv")


def test_missing_column(single_label_tree):
    with pytest.raises(DataError, match=r"labels.csv: missing column 'diagnosis' \(columns: image, dx, patient\)"):
        FolderDataset(*single_label_tree, label_columns="diagnosis")


def test_missing_images_are_counted_and_named(single_label_tree):
    root, _ = single_label_tree
    for i in (1, 4, 7):
        next(root.glob(f"img{i:02d}.*")).unlink()
    with pytest.raises(DataError, match=r"labels.csv: 3 listed images not found under .*: img01.png, img04.jpg, img07.png"):
        make_single(single_label_tree)


def test_unknown_label_names_the_line_and_value(single_label_tree):
    with pytest.raises(DataError, match=r"labels.csv line 4: unknown label 'bcc' in column 'dx'"):
        make_single(single_label_tree, class_names=["nevus", "melanoma"])


def test_blank_single_label(single_label_tree):
    root, csv = single_label_tree
    csv.write_text(csv.read_text().replace("img02.jpg,bcc", "img02.jpg,"))
    with pytest.raises(DataError, match=r"labels.csv line 4: missing label '' in column 'dx'"):
        make_single(single_label_tree)


def test_non_integer_ordinal_grade(tmp_path):
    save_image(tmp_path / "a.png")
    csv = write_csv(tmp_path / "l.csv", "image,grade\na.png,mild")
    with pytest.raises(DataError, match=r"l.csv line 2: unknown label 'mild' in column 'grade'"):
        FolderDataset(tmp_path, csv, label_columns="grade", task_type="ordinal")


def test_multi_label_value_outside_zero_one(tmp_path):
    save_image(tmp_path / "a.png")
    save_image(tmp_path / "b.png")
    csv = write_csv(tmp_path / "l.csv", "image,x,y\na.png,1,0\nb.png,-1,0")
    with pytest.raises(DataError, match=r"l.csv line 3: unknown label '-1' in column 'x'"):
        FolderDataset(tmp_path, csv, label_columns=["x", "y"], task_type="multi_label")


def test_duplicate_image_ids_are_named(single_label_tree):
    root, csv = single_label_tree
    csv.write_text(csv.read_text() + "img03.png,bcc,p9\nimg05.png,bcc,p9\n")
    with pytest.raises(DataError, match=r"labels.csv: 2 image names listed more than once .*img03.png, img05.png"):
        make_single(single_label_tree)


def test_row_with_wrong_field_count(single_label_tree):
    root, csv = single_label_tree
    csv.write_text(csv.read_text() + "img99.png,bcc\n")
    with pytest.raises(DataError, match=r"labels.csv line 14: expected 3 fields"):
        make_single(single_label_tree)


def test_empty_csv_and_header_only(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty.csv: empty file"):
        FolderDataset(tmp_path, tmp_path / "empty.csv")
    (tmp_path / "header.csv").write_text("image,label\n")
    with pytest.raises(DataError, match="header.csv: no data rows"):
        FolderDataset(tmp_path, tmp_path / "header.csv")


def test_unknown_split_value(tmp_path):
    save_image(tmp_path / "a.png")
    save_image(tmp_path / "b.png")
    csv = write_csv(tmp_path / "l.csv", "image,label,fold\na.png,0,train\nb.png,1,holdout")
    with pytest.raises(DataError, match=r"l.csv line 3: unknown split 'holdout' in column 'fold'"):
        FolderDataset(tmp_path, csv, split_column="fold")


def test_patient_in_two_given_splits(tmp_path):
    save_image(tmp_path / "a.png")
    save_image(tmp_path / "b.png")
    csv = write_csv(tmp_path / "l.csv", "image,label,pid,fold\na.png,0,p1,train\nb.png,1,p1,test")
    with pytest.raises(DataError, match=r"l.csv: group 'p1' appears in both 'train' and 'test'"):
        FolderDataset(tmp_path, csv, group_column="pid", split_column="fold")


def test_single_class_is_rejected(tmp_path):
    save_image(tmp_path / "a.png")
    csv = write_csv(tmp_path / "l.csv", "image,label\na.png,0")
    with pytest.raises(DataError, match="l.csv: .*needs at least two classes"):
        FolderDataset(tmp_path, csv)


def test_unknown_task_type(single_label_tree):
    with pytest.raises(DataError, match="task_type must be one of"):
        make_single(single_label_tree, task_type="regression")


def test_unknown_split_name(single_label_tree):
    with pytest.raises(DataError, match="unknown split 'dev'"):
        make_single(single_label_tree).split("dev")


def test_an_image_edited_in_place_with_the_same_size_changes_the_fingerprint(single_label_tree):
    import os

    root, _ = single_label_tree
    base = make_single(single_label_tree)
    assert base.fingerprint().startswith("mtime-")  # the mode a run used is in the value
    image = root / "img05.png"
    stat = image.stat()
    save_image(image, seed=123)  # same size (same dimensions, PNG of noise), new pixels
    os.utime(image, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert make_single(single_label_tree).fingerprint() != base.fingerprint()


def test_content_fingerprint_follows_the_bytes_not_the_time(single_label_tree):
    import os

    root, _ = single_label_tree
    base = make_single(single_label_tree, fingerprint="content").fingerprint()
    assert base.startswith("content-")
    image = root / "img05.png"
    os.utime(image, ns=(0, 0))  # a copy that resets times: the content hash does not care
    assert make_single(single_label_tree, fingerprint="content").fingerprint() == base
    data = bytearray(image.read_bytes())
    data[-20] ^= 0xFF  # same size, other bytes, time restored
    image.write_bytes(bytes(data))
    os.utime(image, ns=(0, 0))
    assert make_single(single_label_tree, fingerprint="content").fingerprint() != base
    # the options model's one-line error, the same one a suite gets
    with pytest.raises(DataError, match="bad options: fingerprint: Input should be 'mtime' or 'content'"):
        make_single(single_label_tree, fingerprint="size")


def test_the_decoded_store_decodes_each_file_once_and_follows_edits(tmp_path):
    from crsbench.datasets.decoded import DecodedStore

    paths = [save_image(tmp_path / "img" / f"{i}.png", size=(30, 20), seed=i) for i in range(3)]
    store = DecodedStore(tmp_path / "decoded")
    plain, stored = FileImages(paths), FileImages(paths).with_store(store)
    for _ in range(3):  # three encoders' passes
        np.testing.assert_array_equal(stored.batch([0, 1, 2]), plain.batch([0, 1, 2]))
    assert store.decoded == 3 and store.hits == 6
    save_image(paths[1], size=(30, 20), seed=99)  # the file is replaced: its stored copy must not be served
    os.utime(paths[1], ns=(1, 10**18))
    np.testing.assert_array_equal(stored[1], plain[1])
    assert store.decoded == 4
    store._file(store.key(paths[0], None)).write_bytes(b"torn")  # a damaged copy is decoded again
    assert [im.shape for im in stored.batch([0, 1, 2])] and store.decoded == 5
