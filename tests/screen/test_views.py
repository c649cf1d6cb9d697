"""The views of a frame: golden checksums, numpy == torch, fovea clamping, quadrant order, crops."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.resample import area_resample
from hoi4_arena.screen.views import (
    compute_views,
    compute_views_bgra,
    compute_views_torch,
    crop_regions,
    fovea_origin,
)

GOLDEN_DIR = Path(__file__).parents[1] / "golden"
_spec = importlib.util.spec_from_file_location("resample_golden", GOLDEN_DIR / "resample_golden.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)
VIEW_CASES = json.loads((GOLDEN_DIR / "resample.json").read_text())["views"]
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
    ),
]


@pytest.fixture(scope="module")
def hd_frame() -> np.ndarray:
    return golden.golden_frame((1080, 1920, 3), "hash")


def check(case: dict, views: dict) -> None:
    assert set(views) == {"global", "quadrants", "fovea"}
    for name, array in views.items():
        assert list(array.shape) == case["shapes"][name] and array.dtype == np.uint8
        assert golden.sha256(array) == case["sha256"][name], f"{case['name']}: {name}"


@pytest.mark.parametrize("case", VIEW_CASES, ids=lambda c: c["name"])
def test_numpy_views_match_golden(case: dict, hd_frame: np.ndarray) -> None:
    check(case, compute_views(hd_frame, case["pointer"], ViewLayout.named(case["layout"])))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", VIEW_CASES, ids=lambda c: c["name"])
def test_torch_views_match_golden(case: dict, device: str, hd_frame: np.ndarray) -> None:
    frame = torch.from_numpy(hd_frame).to(device)
    views = compute_views_torch(frame, case["pointer"], ViewLayout.named(case["layout"]))
    assert all(v.device.type == device for v in views.values())
    check(case, {name: view.cpu().numpy() for name, view in views.items()})


def test_torch_batch_equals_numpy_per_frame() -> None:
    layout = ViewLayout.named("cpu")
    frames = np.stack([golden.golden_frame((271, 483, 3), "hash", seed=s) for s in range(3)])
    pointers = [(0, 0), (482, 270), (100, 200)]
    batched = compute_views_torch(torch.from_numpy(frames), torch.tensor(pointers), layout)
    assert batched["quadrants"].shape == (3, 4, 90, 160, 3) and batched["fovea"].shape == (3, 64, 64, 3)
    for i in range(3):
        single = compute_views(frames[i], pointers[i], layout)
        for name in single:
            assert np.array_equal(batched[name][i].numpy(), single[name]), name


def test_quadrant_order_and_odd_screens() -> None:
    # Each quarter filled with its own value: the quadrants come back top-left, top-right,
    # bottom-left, bottom-right, and on an odd screen the right and bottom ones are the larger halves.
    h, w = 301, 401
    frame = np.zeros((h, w, 3), np.uint8)
    frame[: h // 2, : w // 2] = 10
    frame[: h // 2, w // 2 :] = 20
    frame[h // 2 :, : w // 2] = 30
    frame[h // 2 :, w // 2 :] = 40
    views = compute_views(frame, (0, 0), ViewLayout.named("cpu"))
    assert [int(q.min()) for q in views["quadrants"]] == [10, 20, 30, 40]
    assert [int(q.max()) for q in views["quadrants"]] == [10, 20, 30, 40]
    assert np.array_equal(views["quadrants"][3], area_resample(frame[150:, 200:], (90, 160)))


@pytest.mark.parametrize(
    ("pointer", "origin"),
    [((960, 540), (848, 428)), ((0, 0), (0, 0)), ((1919, 1079), (1696, 856)), ((5000, -20), (1696, 0))],
)
def test_fovea_is_centred_then_clamped(pointer, origin) -> None:
    assert fovea_origin(pointer, (1080, 1920), 224) == origin


def test_fovea_is_the_native_crop_around_the_pointer(hd_frame: np.ndarray) -> None:
    views = compute_views(hd_frame, (700, 300), ViewLayout.named("full"))
    assert np.array_equal(views["fovea"], hd_frame[300 - 112 : 300 + 112, 700 - 112 : 700 + 112])
    assert views["fovea"].flags.c_contiguous


def test_crop_regions() -> None:
    frame = golden.golden_frame((100, 200, 3), "hash")
    crops = crop_regions(frame, {"date": (150, 0, 50, 10), "corner": (0, 90, 1, 10)})
    assert np.array_equal(crops["date"], frame[0:10, 150:200]) and crops["corner"].shape == (10, 1, 3)
    crops["date"][:] = 0  # a copy, not a view into the frame
    assert frame[0:10, 150:200].any()
    with pytest.raises(ValueError, match="'date'.*not inside"):
        crop_regions(frame, {"date": (160, 0, 50, 10)})


def test_bad_frames_are_clear_errors() -> None:
    layout = ViewLayout.named("full")
    with pytest.raises(ValueError, match="uint8 frame"):
        compute_views(np.zeros((1080, 1920, 4), np.uint8), (0, 0), layout)
    with pytest.raises(ValueError, match="smaller than the 224-pixel fovea"):
        compute_views(np.zeros((200, 300, 3), np.uint8), (0, 0), layout)
    with pytest.raises(ValueError, match="2 frames but 1 pointers"):
        compute_views_torch(torch.zeros((2, 300, 300, 3), dtype=torch.uint8), [(0, 0)], layout)


def test_strided_frames_give_the_same_views(hd_frame: np.ndarray) -> None:
    # A BGR capture flipped to RGB is a negative-stride view; its views equal those of a copy.
    bgr = np.ascontiguousarray(hd_frame[:, :, ::-1])
    flipped = bgr[:, :, ::-1]
    assert not flipped.flags.c_contiguous
    layout = ViewLayout.named("full")
    strided, copied = compute_views(flipped, (10, 10), layout), compute_views(hd_frame, (10, 10), layout)
    assert all(np.array_equal(strided[name], copied[name]) for name in copied)


def bgra_of(rgb: np.ndarray) -> np.ndarray:
    bgra = np.empty((*rgb.shape[:2], 4), np.uint8)
    bgra[..., :3] = rgb[..., ::-1]
    bgra[..., 3] = 255
    return bgra


@pytest.mark.parametrize("case", VIEW_CASES, ids=lambda c: c["name"])
def test_bgra_views_match_golden(case: dict, hd_frame: np.ndarray) -> None:
    check(case, compute_views_bgra(bgra_of(hd_frame), case["pointer"], ViewLayout.named(case["layout"])))


@pytest.mark.parametrize("shape", [(2160, 3840), (1081, 1923), (541, 961), (1440, 2560)])
def test_bgra_views_equal_the_torch_views_at_4k_and_odd_sizes(shape: tuple[int, int]) -> None:
    frame = golden.golden_frame((*shape, 3), "hash", seed=11)
    pointer = (shape[1] - 5, 7)
    for name in ("full", "cpu"):
        layout = ViewLayout.named(name)
        want = compute_views_torch(torch.from_numpy(frame), pointer, layout)
        got = compute_views_bgra(bgra_of(frame), pointer, layout)
        assert all(np.array_equal(got[v], want[v].numpy()) for v in want), (shape, name)
    with pytest.raises(ValueError, match=r"\(H, W, 4\) uint8 frame"):
        compute_views_bgra(frame, pointer, layout)
