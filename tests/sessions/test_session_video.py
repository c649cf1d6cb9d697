import time
from pathlib import Path

import numpy as np
import pytest
from killable_recorder import pattern

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.video import (
    VideoConfig,
    VideoEncoder,
    count_decodable,
    decode,
    probe,
    remux_prefix,
)

SIZES = [(180, 320), (540, 960)]


def encode(path: Path, frames: list[np.ndarray], codec: str, hz: float = 10) -> dict:
    encoder = VideoEncoder(path, frames[0].shape[:2], hz, VideoConfig(codec=codec))
    for index, frame in enumerate(frames):
        while not encoder.has_room():
            time.sleep(0.001)
        encoder.submit(frame, index)
    return encoder.close()


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255**2 / mse)


@pytest.mark.parametrize("size", SIZES)
def test_ffv1_is_lossless(tmp_path: Path, size: tuple[int, int]) -> None:
    frames = [pattern(i, size) for i in range(6)]
    frames[3] = np.random.default_rng(3).integers(0, 256, (*size, 3), dtype=np.uint8)  # noise too
    assert encode(tmp_path / "v.mkv", frames, "ffv1") == {"frames": 6, "packets": 6}
    decoded = list(decode(tmp_path / "v.mkv"))
    assert len(decoded) == 6
    for original, back in zip(frames, decoded, strict=True):
        assert np.array_equal(original, back)


@pytest.mark.parametrize("size", SIZES)
def test_x264_crf18_444_is_close(tmp_path: Path, size: tuple[int, int]) -> None:
    frames = [pattern(i, size) for i in range(8)]
    encode(tmp_path / "v.mkv", frames, "x264")
    info = probe(tmp_path / "v.mkv")
    assert (info.codec, info.pix_fmt, info.packets, info.width, info.height) == (
        "h264",
        "yuvj444p",
        8,
        size[1],
        size[0],
    )
    decoded = list(decode(tmp_path / "v.mkv"))
    assert len(decoded) == 8
    for original, back in zip(frames, decoded, strict=True):
        assert back.shape == original.shape and back.dtype == np.uint8
        assert psnr(original, back) > 40.0


def test_a_truncated_file_decodes_its_complete_frames_exactly(tmp_path: Path) -> None:
    frames = [pattern(i, (180, 320)) for i in range(12)]
    encode(tmp_path / "v.mkv", frames, "ffv1")
    data = (tmp_path / "v.mkv").read_bytes()
    rng = np.random.default_rng(0)
    counts = []
    for cut in sorted(rng.integers(len(data) // 10, len(data), size=8)):
        (tmp_path / "cut.mkv").write_bytes(data[:cut])
        decoded = list(decode(tmp_path / "cut.mkv"))
        for index, image in enumerate(decoded):
            assert np.array_equal(image, frames[index])
        assert count_decodable(tmp_path / "cut.mkv") == len(decoded)
        counts.append(len(decoded))
    assert counts == sorted(counts) and counts[-1] < 12 and counts[0] >= 0
    assert count_decodable(tmp_path / "v.mkv") == 12


def test_garbage_is_not_a_video(tmp_path: Path) -> None:
    (tmp_path / "v.mkv").write_bytes(b"\x00" * 1000)
    assert count_decodable(tmp_path / "v.mkv") == 0
    assert probe(tmp_path / "v.mkv").error.startswith("cannot open")


def test_remux_prefix_copies_packets_without_reencoding(tmp_path: Path) -> None:
    frames = [pattern(i, (180, 320)) for i in range(10)]
    encode(tmp_path / "v.mkv", frames, "x264")
    full = list(decode(tmp_path / "v.mkv"))
    assert remux_prefix(tmp_path / "v.mkv", tmp_path / "p.mkv", 4) == 4
    prefix = list(decode(tmp_path / "p.mkv"))
    assert len(prefix) == 4
    for a, b in zip(full, prefix, strict=False):
        assert np.array_equal(a, b)


def test_nvenc_is_refused_with_a_message_where_there_is_none(tmp_path: Path) -> None:
    try:
        encoder = VideoEncoder(tmp_path / "v.mkv", (180, 320), 10, VideoConfig(codec="nvenc"))
    except UserError as error:
        assert "nvenc is not available on this machine" in str(error)
        assert "--codec x264" in str(error)
        assert not (tmp_path / "v.mkv").exists()
    else:  # a machine with NVENC: it must really encode
        encoder.submit(pattern(0, (180, 320)), 0)
        assert encoder.close()["frames"] == 1
        assert count_decodable(tmp_path / "v.mkv") == 1


def test_an_encoding_error_reaches_the_producer(tmp_path: Path) -> None:
    encoder = VideoEncoder(tmp_path / "v.mkv", (180, 320), 10, VideoConfig(codec="x264"))
    encoder.submit(np.zeros((180, 320, 4), np.uint8), 0)  # rgb24 wants 3 channels
    with pytest.raises(RuntimeError, match="video encoding failed"):
        for _ in range(200):
            encoder.has_room()
            time.sleep(0.01)
    with pytest.raises(RuntimeError, match="video encoding failed"):
        encoder.close()


def test_bad_config_is_a_user_error() -> None:
    with pytest.raises(UserError, match="codec must be one of"):
        VideoConfig(codec="mjpeg")
    with pytest.raises(UserError, match="crf"):
        VideoConfig(crf=99)
