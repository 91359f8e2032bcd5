"""The device capability that the probe's bfloat16 warm-up and the encoders' reduced precision follow."""

import pytest
import torch

from crsbench.core.hardware import bfloat16_is_native


@pytest.mark.parametrize("capability, native", [((7, 5), False), ((8, 0), True), ((8, 6), True), ((9, 0), True)])
def test_bfloat16_is_native_on_a_cuda_device_from_compute_capability_8(monkeypatch, capability, native):
    asked = []

    def capability_of(device):
        asked.append(device)
        return capability

    monkeypatch.setattr(torch.cuda, "get_device_capability", capability_of)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: not native)  # the CPU's answer is not used
    assert bfloat16_is_native("cuda:1") is native
    assert asked == [torch.device("cuda:1")]  # the device asked about, not the current one


@pytest.mark.parametrize("avx512_bf16", [False, True])
def test_bfloat16_is_native_on_a_cpu_by_its_instruction_set_and_never_on_other_devices(monkeypatch, avx512_bf16):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: (9, 0))  # not asked for a CPU
    assert bfloat16_is_native("cpu") is avx512_bf16
    assert bfloat16_is_native(torch.device("cpu")) is avx512_bf16
    assert bfloat16_is_native("mps") is False
