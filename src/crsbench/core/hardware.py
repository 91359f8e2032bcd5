"""What a torch device can do fast, asked once per question: the probe's warm-up and the encoders'
reduced precision both follow it, so one device never gets two answers."""

from __future__ import annotations

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
