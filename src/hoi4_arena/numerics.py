"""Pinned CPU numerics: one instruction set for torch's CPU libraries, whatever CPU a run lands on.

The torch wheel does its float work in three libraries, and each picks its kernels by the CPU it runs on
(`torch.__config__.show()`, `ONEDNN_VERBOSE=1`, `MKL_VERBOSE=1` on an AMD EPYC with AVX-512):

- ATen's own vectorised kernels (element-wise ops, reductions, the optimizer's updates, the GRU's gates):
  AVX-512 or AVX2 builds of each kernel, chosen at the first call (`ATEN_CPU_CAPABILITY`);
- oneDNN for the convolutions and their gradients (`brg_conv_fwd:avx512_core` and `jit:avx512_core` by
  default; `ONEDNN_MAX_CPU_ISA` caps what it may use);
- MKL for the matrix products of the linear layers (`SGEMM`). MKL picks its code branch by the CPU's
  vendor and ISA; `MKL_CBWR` fixes the branch and makes its reductions deterministic. Only AUTO and
  COMPATIBLE hold on a CPU that is not Intel's: there `MKL_CBWR=AVX2` silently means AUTO (measured on
  this EPYC: the same weights as AUTO and AVX512), so COMPATIBLE, the one branch every x86-64 CPU runs
  alike, is the pinned one.

Different kernels round differently, and thousands of optimizer steps turn a last-bit difference into
another policy, so the quickstart pins all three to what every x86-64 machine here has (AVX2), in its own
processes only, before torch loads: `pin_numerics()` sets the variables in this process's environment,
which the libraries read when they start and every child process inherits. On one machine the pinned run
gives the same weights whether the process would otherwise pick AVX-512 or AVX2 (tests/test_numerics.py).
What the pinning does not fix: oneDNN sizes its blocks by the CPU's caches and the thread count, so two
CPU models may still sum a convolution in another order; one pair was compared (an AMD EPYC with
AVX-512 and one without trained the quickstart's same weights), not every model.
The cost, where the CPU has AVX-512: about 1.37x the CPU of a training step and of a play decision
(bench/pinned_numerics.py, on this EPYC; oneDNN's AVX2 convolutions are most of it, MKL's branch almost
none); nothing where it has not.

Try: .venv/bin/python -c "from hoi4_arena.numerics import pin_numerics; print(pin_numerics())"
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import MutableMapping
from functools import cache
from typing import Any

PINNED = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "COMPATIBLE",
}
"""The variables that pin torch's CPU libraries, and their values (read once, when each library starts)."""


def pinnable() -> bool:
    """Whether this machine is one the pinning is for: x86-64 (the variables mean nothing on ARM)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def pin_numerics(environ: MutableMapping[str, str] | None = None) -> dict[str, Any]:
    """Pin torch's CPU libraries to AVX2 in this process (when torch has not loaded yet) and in every process
    it starts. Returns what `numerics()` says is in effect, `pinned` true when this process's kernels are
    the pinned ones: false where torch loaded before the call with other settings (a caller that imported
    it first, as a test process may), or off x86-64."""
    environ = os.environ if environ is None else environ
    if not pinnable():
        return numerics(environ)
    already = all(environ.get(key) == value for key, value in PINNED.items())
    loaded = "torch" in sys.modules
    environ.update(PINNED)
    return numerics(environ, pinned=already or not loaded)


def numerics(environ: MutableMapping[str, str] | None = None, pinned: bool | None = None) -> dict[str, Any]:
    """The CPU and the numerics settings of this process, for a report: the CPU's model and whether it has
    AVX-512, each pinning variable's value, ATen's capability where torch has loaded, and `pinned`."""
    environ = os.environ if environ is None else environ
    settings = {key: environ.get(key) for key in PINNED}
    if pinned is None:
        pinned = pinnable() and all(settings[key] == value for key, value in PINNED.items())
    torch = sys.modules.get("torch")
    capability = torch.backends.cpu.get_cpu_capability() if torch is not None else None
    if capability is not None and pinnable():
        pinned = pinned and capability == "AVX2"
    return {"pinned": pinned, **cpu(), "aten_capability": capability, "settings": settings}


@cache
def cpu() -> dict[str, Any]:
    """This machine's CPU model and whether it has AVX-512 (from /proc/cpuinfo; None where it cannot say)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = line.partition(":")
                found.setdefault(key.strip(), value.strip())
                if "model name" in found and "flags" in found:
                    break
    except OSError:
        pass
    flags = found.get("flags")
    return {
        "cpu": found.get("model name") or platform.processor() or None,
        "avx512": None if flags is None else "avx512f" in flags.split(),
    }
