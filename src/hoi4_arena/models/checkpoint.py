"""Policy checkpoints: weights, the full config, the layout and action-space versions, provenance.

One file written with `torch.save` holding only plain content (dicts, lists, strings, numbers, tensors),
so it loads with `torch.load(weights_only=True)`: opening a checkpoint never runs pickled code. Keys:

    format            "hoi4-arena-policy"
    format_version    1
    config            PolicyConfig as a dict
    layout            {"name", "version"} of the view layout it was trained on
    action_space      {"version", "slots", "kinds", "move_kinds", "lattice"}
    provenance        {"data", "seed", "code_version", "git_commit", "created"}
    model             the state dict
    optimizer         optimizer.state_dict() or None
    extra             anything plain a trainer adds (step counters, RNG states) or {}

Loading refuses, with a message that says what differs, a checkpoint whose layout or action space is
not this code's (or not the layout the caller runs), and a file that is not a policy checkpoint.
Saving writes a temporary file and renames it, so a crash never leaves a half-written checkpoint.

Try: .venv/bin/python -m pytest -q tests/models/test_checkpoint.py
"""

from __future__ import annotations

import datetime as dt
import errno
import hashlib
import os
import pickle
import re
import struct
import subprocess
import warnings
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from hoi4_arena import __version__
from hoi4_arena.errors import UserError, existing_file
from hoi4_arena.models.config import ActionSpace, PolicyConfig
from hoi4_arena.models.policy import Policy

FORMAT = "hoi4-arena-policy"
FORMAT_VERSION = 1


def git_commit() -> str | None:
    """The commit of the code that runs (with '-dirty' if the tree has changes), or None outside git."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "") if commit else None


@dataclass
class Provenance:
    """Where a checkpoint came from."""

    data: Any = None
    """What it was trained on (folders, session ids, a description): plain JSON-like content."""
    seed: int | None = None
    """The training run's seed."""
    code_version: str = __version__
    """hoi4_arena.__version__ of the code that wrote it."""
    git_commit: str | None = field(default_factory=git_commit)
    """The git commit of that code, when it ran from a checkout."""
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    """UTC time of writing."""


@dataclass
class Checkpoint:
    """A loaded checkpoint: the policy ready to use, and everything stored beside it."""

    policy: Policy
    config: PolicyConfig
    layout: dict[str, str]
    action_space: dict[str, Any]
    provenance: dict[str, Any]
    optimizer: dict[str, Any] | None
    extra: dict[str, Any]

    def refuse_intents(self, path: str | Path, command: str) -> None:
        """UserError when this policy is conditioned on intents (train-bc --skills): `command` has none
        to give it each decision."""
        if self.config.intents:
            raise UserError(
                f"{path} was trained with train-bc --skills: it carries out an intent it is given each decision "
                f"and {command} has none to give it; use a checkpoint trained without --skills"
            )


def weights_sha256(state: dict[str, torch.Tensor]) -> str:
    """The sha256 of a model's weights alone (names, dtypes, shapes and bytes, in name order): the same
    for two runs that trained the same weights, though their checkpoint files differ in when and where
    they were written (provenance)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def save_checkpoint(
    path: str | Path,
    policy: Policy,
    *,
    provenance: Provenance | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write `policy` (and the optimizer's state, when given) to `path` atomically."""
    path = Path(path)
    content = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": policy.config.to_dict(),
        "layout": {"name": policy.config.layout, "version": policy.sizes.layout_version},
        "action_space": policy.space.describe(),
        "provenance": asdict(provenance or Provenance()),
        "model": {k: v.detach().cpu() for k, v in policy.state_dict().items()},
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "extra": extra or {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    torch.save(content, temporary)
    os.replace(temporary, path)
    return path


def _differences(stored: dict[str, Any], current: dict[str, Any]) -> str:
    keys = [k for k in current if stored.get(k) != current[k]]
    return "; ".join(f"{k}: checkpoint {stored.get(k)!r}, this code {current[k]!r}" for k in keys)


UNREADABLE = (
    RuntimeError,
    OSError,
    EOFError,
    pickle.UnpicklingError,
    zipfile.BadZipFile,
    struct.error,
    KeyError,  # a text file read as a legacy pickle: its first byte taken for an opcode
    ValueError,
    IndexError,
    TypeError,
)
"""What `torch.load` raises for a file that is no torch save (junk, text, a truncated copy)."""


def read_torch_file(path: Path, what: str) -> Any:
    """The contents of a torch save a user gave (`weights_only`: no pickled code runs); a file that cannot be
    read is a UserError naming `what` it should have been. Every loader of the project's .pt files reads
    through here, so each refuses the same broken files the same way. torch's warning about a pickle
    protocol it did not write (junk often starts like one; it asks the user to file an issue with torch) is
    kept off the user's screen: the error says what is wrong."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            return torch.load(path, map_location="cpu", weights_only=True)
    except UNREADABLE as error:
        raise UserError(f"cannot read {what} {path}: {_reason(error)}") from None


def _reason(error: BaseException) -> str:
    """torch.load's error in a line. Its weights-only refusal advises loading with weights_only=False, which
    would run whatever code the file holds: the reason is given instead, without the advice."""
    text = str(error)
    if text.startswith("Weights only load failed"):
        found = re.search(r"WeightsUnpickler error:\s*(.+?)\n", text + "\n")
        detail = f" ({found.group(1).strip()})" if found else ""
        return f"not a torch save of plain weights{detail}; a file that needs its own code run to load is refused"
    line = text.splitlines()[0] if text else ""
    if isinstance(error, RuntimeError) or (isinstance(error, OSError) and error.errno != errno.EINVAL):
        return line or type(error).__name__  # a missing or unreadable file, a torn zip archive: said well
    # The unpickler's own errors on junk say little by themselves (a KeyError's text is a number).
    return f"not a torch save, or a cut-off one ({type(error).__name__}{': ' + line if line else ''})"


def load_checkpoint(
    path: str | Path, *, layout: str | None = None, device: str | torch.device = "cpu"
) -> Checkpoint:
    """Load a policy checkpoint, refusing one of another layout or action space.

    `layout`, when given, is the layout name the caller runs (a worker's, a data set's): a checkpoint
    trained on another layout is refused. The policy comes back in eval mode on `device`.
    """
    path = existing_file(path, "checkpoint")
    content = read_torch_file(path, "checkpoint")
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        raise UserError(f"{path} is not a hoi4-arena policy checkpoint (no format {FORMAT!r})")
    if content.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"checkpoint {path} has format version {content.get('format_version')!r}; "
            f"this code reads version {FORMAT_VERSION}"
        )
    try:
        config = PolicyConfig.from_dict(content["config"])
    except (TypeError, ValueError) as error:
        raise UserError(f"checkpoint {path} holds a config this code refuses: {error}") from None

    space = ActionSpace.default()
    if content["action_space"] != space.describe():
        raise UserError(
            f"checkpoint {path} was trained for another action space ("
            + _differences(content["action_space"], space.describe())
            + "); retrain it for this code's tokens"
        )
    stored_layout = content["layout"]
    if layout is not None and layout != stored_layout["name"]:
        raise UserError(
            f"checkpoint {path} was trained on view layout {stored_layout['name']!r}, "
            f"but this run uses layout {layout!r}; use a checkpoint of layout {layout!r} or run with "
            f"layout {stored_layout['name']!r}"
        )
    config.view_layout.require_version(stored_layout["version"], f"checkpoint {path}")

    policy = Policy(config, space, load_weights=False)
    try:
        policy.load_state_dict(content["model"], strict=True)
    except RuntimeError as error:
        detail = " ".join(line.strip() for line in str(error).splitlines()[1:4])
        raise UserError(
            f"checkpoint {path}'s weights do not fit the policy its config builds: {detail}"
        ) from None
    policy.to(device).eval()
    return Checkpoint(
        policy=policy,
        config=config,
        layout=stored_layout,
        action_space=content["action_space"],
        provenance=content["provenance"],
        optimizer=content.get("optimizer"),
        extra=content.get("extra") or {},
    )
