"""The device computations run on (pylance's ``lance.torch.preferred_device``)."""

from __future__ import annotations

from typing import Any, Optional

import torch

from lancepy.exceptions import InvalidArgumentError


def preferred_device(device: Optional[Any] = None) -> torch.device:
    """`device` as a ``torch.device`` (a name such as ``"cuda:1"``, or a device); when None,
    the fastest one here: CUDA if available, then Apple's MPS, then the CPU."""
    if device is not None:
        if isinstance(device, torch.device):
            return device
        if not isinstance(device, str):
            raise InvalidArgumentError(f"device must be a str or torch.device, got {type(device).__name__}")
        try:
            return torch.device(device)
        except RuntimeError as e:
            raise InvalidArgumentError(f"device {device!r}: {e}") from None
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available() and mps.is_built():
        return torch.device("mps")
    return torch.device("cpu")
