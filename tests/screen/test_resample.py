"""The exact area average: golden vectors, a rational reference, and numpy == torch byte for byte."""

from __future__ import annotations

import importlib.util
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hoi4_arena.screen import resample, resample_torch

GOLDEN_DIR = Path(__file__).parents[1] / "golden"
_spec = importlib.util.spec_from_file_location("resample_golden", GOLDEN_DIR / "resample_golden.py")
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)
GOLDEN = json.loads((GOLDEN_DIR / "resample.json").read_text())
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
    ),
]


def rational_resample(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The definition, slowly: in real coordinates input pixel (a, b) is the unit square at (a, b) and
    output pixel (j, k) the box of side (H/h, W/w); its value is the area-weighted mean, rounded half up."""
    height, width, channels = image.shape
    h, w = size
    sy, sx = Fraction(height, h), Fraction(width, w)

    def overlaps(n_in: int, scale: Fraction, j: int) -> list[tuple[int, Fraction]]:
        lo, hi = j * scale, (j + 1) * scale
        return [(i, min(hi, i + 1) - max(lo, i)) for i in range(n_in) if min(hi, i + 1) > max(lo, i)]

    out = np.empty((h, w, channels), dtype=np.uint8)
    for j in range(h):
        rows = overlaps(height, sy, j)
        for k in range(w):
            cols = overlaps(width, sx, k)
            for c in range(channels):
                total = sum(oy * ox * int(image[a, b, c]) for a, oy in rows for b, ox in cols)
                mean = total / (sy * sx)
                out[j, k, c] = int(mean + Fraction(1, 2))  # floor(mean + 1/2): half up
    return out


def golden_input(case: dict) -> np.ndarray:
    return golden.golden_frame(tuple(case["input"]["shape"]), case["input"]["kind"])


def check_golden(case: dict, out: np.ndarray) -> None:
    h, w = case["size"]
    assert out.shape == (h, w, case["input"]["shape"][2])
    assert out.dtype == np.uint8
    if "output" in case:
        assert out.tolist() == case["output"]
    for y, x, c, value in case.get("samples", []):
        assert out[y, x, c] == value
    assert golden.sha256(out) == case["sha256"], case["name"]


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda case: case["name"])
def test_numpy_matches_golden(case: dict) -> None:
    check_golden(case, resample.area_resample(golden_input(case), case["size"]))


@pytest.mark.parametrize("path", ["taps", "prefix_sums"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda case: case["name"])
def test_torch_matches_golden(case: dict, device: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if path == "prefix_sums":  # the branch large downscales take, forced on every case
        monkeypatch.setattr(resample_torch, "MAX_TAPS", 0)
    image = torch.from_numpy(golden_input(case)).to(device)
    out = resample_torch.area_resample(image, case["size"])
    assert out.device.type == device and out.dtype == torch.uint8
    check_golden(case, out.cpu().numpy())


def test_golden_file_agrees_with_its_reference_on_small_cases() -> None:
    # The golden file must be what its documented generator writes (no hand edits).
    for case in GOLDEN["cases"]:
        if "output" in case:
            expected = golden.reference_resample(golden_input(case), tuple(case["size"]))
            assert expected.tolist() == case["output"]


def test_rounding_is_half_up_once() -> None:
    # [0, 1] -> 0.5 -> 1 and [254, 255] -> 254.5 -> 255 (round half up, never half to even).
    assert resample.area_resample(np.array([[0, 1]], np.uint8), (1, 1)).item() == 1
    assert resample.area_resample(np.array([[254, 255]], np.uint8), (1, 1)).item() == 255
    assert resample.area_resample(np.array([[1, 2]], np.uint8), (1, 1)).item() == 2
    # Fractional coverage: [0, 0, 1] -> 2 pixels of 1.5 inputs: 0 / 1.5 and (0 * 0.5 + 1) / 1.5 = 2/3.
    row = np.array([[0, 0, 1]], np.uint8)
    assert resample.area_resample(row, (1, 2)).tolist() == [[0, 1]]
    assert resample.area_resample(row, (1, 1)).item() == 0  # 1/3
    # Rounding happens once, on the exact 2-D mean: 2x2 of [[0, 1], [1, 1]] is 0.75 -> 1, while
    # rounding each row first (0.5 -> 1, 1) would also give 1 but [[0, 1], [0, 0]] (0.25) must give 0.
    assert resample.area_resample(np.array([[0, 1], [0, 0]], np.uint8), (1, 1)).item() == 0


@settings(max_examples=150, deadline=None)
@given(
    h_in=st.integers(1, 12),
    w_in=st.integers(1, 12),
    h_out=st.integers(1, 12),
    w_out=st.integers(1, 12),
    channels=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    flat=st.booleans(),
)
def test_exact_against_rational_reference(h_in, w_in, h_out, w_out, channels, seed, flat) -> None:
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (h_in, w_in, channels), dtype=np.uint8)
    if flat:  # nearly flat images put many means right on a half
        image = (image % 2 + 127).astype(np.uint8)
    expected = rational_resample(image, (h_out, w_out))
    assert np.array_equal(resample.area_resample(image, (h_out, w_out)), expected)
    assert np.array_equal(
        resample_torch.area_resample(torch.from_numpy(image), (h_out, w_out)).numpy(), expected
    )


@settings(max_examples=25, deadline=None)
@given(
    h_in=st.integers(2, 300),
    w_in=st.integers(2, 300),
    h_out=st.integers(1, 120),
    w_out=st.integers(1, 120),
    seed=st.integers(0, 2**32 - 1),
)
def test_numpy_and_torch_agree_on_larger_sizes(h_in, w_in, h_out, w_out, seed) -> None:
    image = np.random.default_rng(seed).integers(0, 256, (h_in, w_in, 3), dtype=np.uint8)
    expected = golden.reference_resample(image, (h_out, w_out))
    assert np.array_equal(resample.area_resample(image, (h_out, w_out)), expected)
    assert np.array_equal(
        resample_torch.area_resample(torch.from_numpy(image), (h_out, w_out)).numpy(), expected
    )


@pytest.mark.parametrize("shape", [(2160, 3840), (1440, 2560), (1081, 1919)])
def test_large_and_odd_screens_agree_with_torch(shape: tuple[int, int]) -> None:
    frame = golden.golden_frame((*shape, 3), "hash", seed=7)
    for size in ((256, 448), (320, 576), (72, 128)):
        expected = resample_torch.area_resample(torch.from_numpy(frame), size).numpy()
        assert np.array_equal(resample.area_resample(frame, size), expected)


def test_constant_images_stay_constant() -> None:
    for value in (0, 1, 127, 128, 254, 255):
        image = np.full((37, 53, 3), value, np.uint8)
        assert (resample.area_resample(image, (11, 70)) == value).all()


def test_two_dimensional_and_non_contiguous_input() -> None:
    image = golden.golden_frame((40, 60, 3), "hash")
    gray = np.ascontiguousarray(image[:, :, 1])
    assert np.array_equal(
        resample.area_resample(gray, (7, 9)), resample.area_resample(image, (7, 9))[:, :, 1]
    )
    view = image[5:35, 10:50]  # a strided crop
    assert np.array_equal(resample.area_resample(view, (6, 8)), resample.area_resample(view.copy(), (6, 8)))


def test_grid_equals_separate_crops_including_odd_halves() -> None:
    frame = golden.golden_frame((101, 203, 3), "hash", seed=3)
    rows, cols = [(0, 50), (50, 51)], [(0, 101), (101, 102)]
    grid = resample.area_resample_grid(frame, rows, cols, (17, 29))
    assert grid.shape == (2, 2, 17, 29, 3)
    for r, (y, hh) in enumerate(rows):
        for c, (x, ww) in enumerate(cols):
            assert np.array_equal(
                grid[r, c], golden.reference_resample(frame[y : y + hh, x : x + ww], (17, 29))
            )


def test_torch_batches_leading_dimensions() -> None:
    frames = np.stack([golden.golden_frame((30, 50, 3), "hash", seed=s) for s in range(6)]).reshape(
        2, 3, 30, 50, 3
    )
    out = resample_torch.area_resample(torch.from_numpy(frames), (7, 11)).numpy()
    assert out.shape == (2, 3, 7, 11, 3)
    for i in range(2):
        for j in range(3):
            assert np.array_equal(out[i, j], resample.area_resample(frames[i, j], (7, 11)))


@pytest.mark.parametrize(
    ("image", "size", "message"),
    [
        (np.zeros((4, 4, 3), np.float32), (2, 2), "uint8"),
        (np.zeros((4, 4, 3, 1), np.uint8), (2, 2), "shape"),
        (np.zeros((0, 4, 3), np.uint8), (2, 2), "empty"),
        (np.zeros((4, 4, 3), np.uint8), (0, 2), "positive"),
        (np.zeros((4, 4, 3), np.uint8), (2,), "height, width"),
    ],
)
def test_bad_input_is_a_clear_error(image, size, message) -> None:
    with pytest.raises(ValueError, match=message):
        resample.area_resample(image, size)


def test_bad_spans_and_torch_input_are_clear_errors() -> None:
    frame = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="outside"):
        resample.area_resample_grid(frame, [(5, 6)], [(0, 10)], (2, 2))
    with pytest.raises(ValueError, match="uint8"):
        resample_torch.area_resample(torch.zeros((4, 4, 3)), (2, 2))
    with pytest.raises(ValueError, match="channels-last"):
        resample_torch.area_resample(torch.zeros((4, 4), dtype=torch.uint8), (2, 2))
    with pytest.raises(TypeError):
        resample.area_resample([[1, 2]], (1, 1))


def test_axis_plan_weights_are_the_coverage() -> None:
    for n_in, n_out in ((1080, 256), (540, 320), (5, 9), (7, 7), (1, 4), (4, 1)):
        plan = resample.axis_plan(n_in, n_out)
        dense = np.zeros((n_out, n_in))
        for j in range(n_out):
            dense[j, plan.start[j] : plan.start[j] + plan.taps] += plan.weights[j]
        assert np.array_equal(dense, golden.coverage_matrix(n_in, n_out))
        assert (plan.start >= 0).all() and (plan.start + plan.taps <= n_in).all()


def test_sums_beyond_int32_stay_exact() -> None:
    # 2 x 4.3M pixels: 255 * H * W > 2**31, so torch switches to int64; 5 equal column blocks make the
    # expected value a plain integer mean.
    image = np.random.default_rng(5).integers(0, 256, (2, 4_300_000, 1), dtype=np.uint8)
    blocks = image[:, :, 0].astype(np.int64).reshape(2, 5, -1).sum(axis=(0, 2))
    den = image.shape[0] * image.shape[1] // 5
    expected = ((blocks + den // 2) // den).reshape(1, 5, 1)
    assert np.array_equal(resample.area_resample(image, (1, 5)), expected)
    assert np.array_equal(resample_torch.area_resample(torch.from_numpy(image), (1, 5)).numpy(), expected)
    assert np.array_equal(resample.area_resample(np.full_like(image, 255), (1, 5)), np.full((1, 5, 1), 255))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda case: case["name"])
def test_channel_picking_and_threads_match_golden(case: dict, threads: int) -> None:
    # The kernel read through a BGRA-like pixel (the X11 grab): an extra byte per pixel, channels
    # reversed by `channels`, rows split between two threads. The same golden bytes.
    image = golden_input(case)
    height, width, channels = image.shape
    wider = np.zeros((height, width, channels + 1), np.uint8)
    wider[..., :channels] = image[..., ::-1]
    wider[..., channels] = 77  # a fourth byte (alpha) that must never leak into the output
    order = tuple(range(channels - 1, -1, -1))
    grid = [([(0, height)], [(0, width)], case["size"])]
    (out,) = resample.area_resample_grids(wider, grid, channels=order, threads=threads)
    check_golden(case, out[0, 0])


def test_both_accumulator_widths_are_exercised_and_exact() -> None:
    # uint16 row sums while 255 * (rows / gcd) fits, int32 beyond: 1080 -> 256 is the first kind,
    # 1081 -> 256 (gcd 1) the second; both against the torch twin.
    for rows, want in ((1080, np.uint16), (1081, np.int32)):
        grid = ((((0, rows),), ((0, 1923),), (256, 448)),)
        assert resample.grid_plan(grid, 3, (0, 1, 2)).yweights.dtype == want
        frame = golden.golden_frame((rows, 1923, 3), "hash", seed=rows)
        expected = resample_torch.area_resample(torch.from_numpy(frame), (256, 448)).numpy()
        for threads in (1, 2):
            (out,) = resample.area_resample_grids(frame, [grid[0]], threads=threads)
            assert np.array_equal(out[0, 0], expected)


def test_several_grids_in_one_call_equal_separate_calls() -> None:
    frame = golden.golden_frame((541, 963, 3), "hash", seed=3)
    rows, cols = [(0, 270), (270, 271)], [(0, 481), (481, 482)]
    whole, quads = resample.area_resample_grids(
        frame, [([(0, 541)], [(0, 963)], (72, 128)), (rows, cols, (90, 160))]
    )
    assert np.array_equal(whole[0, 0], resample.area_resample(frame, (72, 128)))
    for r, (y, hh) in enumerate(rows):
        for c, (x, ww) in enumerate(cols):
            crop = torch.from_numpy(np.ascontiguousarray(frame[y : y + hh, x : x + ww]))
            assert np.array_equal(quads[r, c], resample_torch.area_resample(crop, (90, 160)).numpy())
    with pytest.raises(ValueError, match="channels"):
        resample.area_resample_grids(frame, [([(0, 541)], [(0, 963)], (72, 128))], channels=(3,))
