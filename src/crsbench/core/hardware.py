"""Which torch device a computation runs on, and what that device can do fast, each asked in one place:
the encoders, the probe and the scoring bootstrap choose their device here, and the probe's warm-up and
the encoders' reduced precision both follow `bfloat16_is_native`, so one device never gets two answers."""

from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.util
import os
import sys

DEVICE_VARIABLE = "CRSBENCH_DEVICE"  # "cpu" forces the scoring onto the CPU where a GPU is present

# CUDA devices from compute capability 8.0 (Ampere) multiply bfloat16 in their tensor cores; earlier ones
# convert it to float32 first, slower than float32 itself
NATIVE_BFLOAT16_CAPABILITY = (8, 0)


def bfloat16_is_native(device) -> bool:
    """bfloat16 products faster than float32 ones, decided per device: on a CPU, AVX512-BF16 (AMX tiles
    come with it; measured on one such core: the probe's products about 3x, an EfficientNet-Lite0 forward
    about 2x); on a CUDA device, compute capability 8.0 and above; elsewhere (mps, older GPUs) off."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return tuple(torch.cuda.get_device_capability(device)) >= NATIVE_BFLOAT16_CAPABILITY
    return device.type == "cpu" and bool(torch.cpu._is_avx512_bf16_supported())


def choose_device(preference: str = "auto", *, mps: bool = True) -> str:
    """'auto' -> cuda if present, else mps (where `mps` allows it), else cpu; anything else is passed to
    torch as given. The probe's solver asks without mps: its float32 descent is measured on cuda and cpu."""
    import torch

    if preference != "auto":
        return preference
    if torch.cuda.is_available():
        return "cuda"
    backend = torch.backends.mps
    if mps and backend.is_available():
        return "mps"
    return "cpu"


def scoring_device():
    """The scoring bootstrap's torch device: DEVICE_VARIABLE when set, else CUDA when a GPU is present, else
    None (the numpy kernel, with torch never imported on a machine without the NVIDIA driver)."""
    chosen = os.environ.get(DEVICE_VARIABLE)
    if chosen or gpu_present():
        import torch

        if chosen:
            return torch.device(chosen)
        if torch.cuda.is_available():
            return torch.device("cuda")
    return None


@functools.lru_cache(maxsize=1)
def gpu_present() -> bool:
    """torch's own answer (`torch.cuda.is_available`), asked once per process, wherever it can be yes:
    torch already loaded, or installed on a machine where the NVIDIA driver shows. Elsewhere torch is not
    imported: its import costs seconds and hundreds of MB, for nothing on a machine without the driver."""
    loaded = sys.modules.get("torch")
    if loaded is None:
        if importlib.util.find_spec("torch") is None or not nvidia_driver_visible():
            return False
        loaded = _import_torch()
    return bool(loaded.cuda.is_available())


def nvidia_driver_visible() -> bool:
    """The driver's device file or version, or its user-space library loadable: a container given a GPU
    may show neither file, but the library CUDA itself loads is mounted into it."""
    if os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version"):
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def _import_torch():
    return importlib.import_module("torch")
