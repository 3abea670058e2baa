"""Export real networks to ONNX and count their MACs on the PyTorch side (run by check_real_models.py).

This script runs inside a throwaway virtual environment with torch, torchvision, timm,
onnxruntime and onnxscript (never hwsim's own); `tools/check_real_models.py` creates it and
calls this file with its Python. Each network is built with random weights, exported with the
legacy (TorchScript) or dynamo exporter, and its MACs are counted independently of any ONNX
graph by `torch.utils.flop_counter.FlopCounterMode` on the same module and input: MACs =
FLOPs / 2 of convolutions (grouped and depthwise by their true fan-in), mm, addmm, bmm and
baddbmm. Attention runs on PyTorch's math kernel and without nn.MultiheadAttention's fused
fast path, so its Q·Kᵀ and A·V products are bmm calls and counted, as hwsim counts them.
Quantized models are the float export put through onnxruntime's quantization: static QDQ or
QOperator (QLinearConv, QLinearMatMul, ...) with random calibration inputs, or dynamic
(ConvInteger, MatMulInteger with DynamicQuantizeLinear); their count is the float twin's. The mixed
one leaves the first convolution and the classifier in float (`nodes_to_exclude`), as deployments
often do. Inputs are images (1x3xSxS) unless an entry gives its own shape: a batch, audio
(1x1xsamples) or video (1x3xframesxHxW).

Writes DIR/manifest.json: one entry per model with its file, exporter, input size and
independent MACs. Models already exported (file and entry present) are kept.
Usage: python export_real_models.py OUT_DIR [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

LEGACY_OPSET = 17


@dataclass(frozen=True)
class Spec:
    name: str  # file stem and table row
    network: str  # what the user asked for
    # legacy, dynamo, legacy+qdq, legacy+qdq-mixed (first conv and classifier left in float), legacy+qop (static
    # QOperator) or legacy+dynq (dynamic quantization)
    exporter: str
    size: int  # square input, pixels
    build: Callable[[], nn.Module]
    opset: int = LEGACY_OPSET
    shape: tuple[int, ...] | None = None  # the whole input shape when it is not 1x3xSIZExSIZE

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.shape or (1, 3, self.size, self.size)


@dataclass(frozen=True)
class Entry:
    name: str
    network: str
    exporter: str
    file: str
    input_hw: tuple[int, int]
    input_shape: tuple[int, ...]
    independent_macs: int
    macs_by_op: dict[str, int]
    twin: str | None  # the float model a quantized one was made from
    export_s: float


class FirstOutput(nn.Module):
    """Segmentation models return {"out": ...}; the exporters want a tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)["out"]


class M5(nn.Module):
    """Dai et al.'s M5 raw-waveform classifier: an 80-tap stride-4 front conv, three 3-tap convs (128, 256, 512),
    each followed by batch norm, ReLU and 4x max pooling, then global average pooling and a linear classifier."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for c_in, c_out, kernel, stride in ((1, 128, 80, 4), (128, 128, 3, 1), (128, 256, 3, 1), (256, 512, 3, 1)):
            layers += [nn.Conv1d(c_in, c_out, kernel, stride), nn.BatchNorm1d(c_out), nn.ReLU(), nn.MaxPool1d(4)]
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


class Wav2Vec2FeatureEncoder(nn.Module):
    """wav2vec 2.0's convolutional feature encoder (base, group-norm variant) without torchaudio: seven bias-free
    512-channel Conv1d, kernels (10,3,3,3,3,2,2), strides (5,2,2,2,2,2,2), GroupNorm(512, 512) after the first,
    GELU after each."""

    KERNELS = (10, 3, 3, 3, 3, 2, 2)
    STRIDES = (5, 2, 2, 2, 2, 2, 2)

    def __init__(self, channels: int = 512) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for i, (kernel, stride) in enumerate(zip(self.KERNELS, self.STRIDES)):
            layers.append(nn.Conv1d(1 if i == 0 else channels, channels, kernel, stride, bias=False))
            if i == 0:
                layers.append(nn.GroupNorm(channels, channels))
            layers.append(nn.GELU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def _torchvision(name: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import torchvision

        return torchvision.models.get_model(name, weights=None)

    return build


def _timm(name: str) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False)

    return build


def _deeplab() -> nn.Module:
    import torchvision

    return FirstOutput(torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None))


def specs() -> list[Spec]:
    out: list[Spec] = []
    for exporter in ("legacy", "dynamo"):
        out += [
            Spec(f"convnext_tiny-{exporter}", "ConvNeXt-Tiny", exporter, 224, _torchvision("convnext_tiny")),
            Spec(f"swin_t-{exporter}", "Swin-T", exporter, 224, _torchvision("swin_t")),
            Spec(f"vit_b_16-{exporter}", "ViT-B/16", exporter, 224, _torchvision("vit_b_16")),
            Spec(f"mobilevitv2_100-{exporter}", "MobileViT-v2", exporter, 256, _timm("mobilevitv2_100")),
            Spec(f"deeplabv3_resnet50-{exporter}", "DeepLabV3-ResNet50 520x520", exporter, 520, _deeplab),
        ]
    out += [
        Spec("convnext_tiny-legacy13", "ConvNeXt-Tiny (opset 13)", "legacy", 224, _torchvision("convnext_tiny"), 13),
        Spec("tf_efficientnet_lite0-legacy", "tf_efficientnet_lite0", "legacy", 224, _timm("tf_efficientnet_lite0")),
    ]
    for name, network in (("resnet18", "ResNet-18"), ("mobilenet_v2", "MobileNetV2"),
                          ("efficientnet_b0", "EfficientNet-B0")):
        out.append(Spec(f"{name}-legacy", network, "legacy", 224, _torchvision(name)))
        out.append(Spec(f"{name}-qdq", f"{network} INT8 QDQ", "legacy+qdq", 224, _torchvision(name)))
    out.append(Spec("resnet18-qdq-mixed", "ResNet-18 INT8, conv1 and fc float", "legacy+qdq-mixed", 224,
                    _torchvision("resnet18")))
    return out + more_specs()


def more_specs() -> list[Spec]:
    """1-D audio, 3-D video, ASPP pads wider than its feature map, QOperator and dynamic quantization, a batch,
    and timm's GRN, weight-standardized and EdgeNeXt blocks."""
    out: list[Spec] = []
    for exporter in ("legacy", "dynamo"):
        out += [
            Spec(f"m5-{exporter}", "M5 audio 8000 samples", exporter, 8000, M5, shape=(1, 1, 8000)),
            Spec(f"wav2vec2_fe-{exporter}", "wav2vec2 feature encoder 16000", exporter, 16000,
                 Wav2Vec2FeatureEncoder, shape=(1, 1, 16000)),
            # output stride 8: a 33x33 feature map under ASPP's dilation-36 (pad 36) branch
            Spec(f"deeplabv3_resnet50_257-{exporter}", "DeepLabV3-ResNet50 257x257", exporter, 257, _deeplab),
        ]
    for name, network in (("r3d_18", "R3D-18"), ("mc3_18", "MC3-18"), ("r2plus1d_18", "R(2+1)D-18")):
        out.append(Spec(f"{name}-legacy", f"{network} 8x112x112", "legacy", 112, _torchvision(name),
                        shape=(1, 3, 8, 112, 112)))
    # S3D's final AvgPool3d((2, 7, 7)) wants at least 13 frames at 224x224
    out.append(Spec("s3d-legacy", "S3D 13x224x224", "legacy", 224, _torchvision("s3d"), shape=(1, 3, 13, 224, 224)))
    out += [
        Spec("resnet34-legacy", "ResNet-34", "legacy", 224, _torchvision("resnet34")),
        Spec("resnet34-qop", "ResNet-34 INT8 QOperator", "legacy+qop", 224, _torchvision("resnet34")),
        Spec("mnasnet0_5-legacy", "MNASNet 0.5", "legacy", 224, _torchvision("mnasnet0_5")),
        Spec("mnasnet0_5-dynq", "MNASNet 0.5 dynamic INT8", "legacy+dynq", 224, _torchvision("mnasnet0_5")),
        Spec("resnet18_b8-legacy", "ResNet-18 batch 8", "legacy", 224, _torchvision("resnet18"),
             shape=(8, 3, 224, 224)),
        Spec("convnextv2_atto-legacy", "ConvNeXt-V2 atto", "legacy", 224, _timm("convnextv2_atto")),
        Spec("nf_resnet26-legacy", "NF-ResNet-26", "legacy", 224, _timm("nf_resnet26")),
        Spec("dm_nfnet_f0-legacy", "NFNet-F0 192x192", "legacy", 192, _timm("dm_nfnet_f0")),
        Spec("edgenext_xx_small-legacy", "EdgeNeXt-XX-Small", "legacy", 256, _timm("edgenext_xx_small")),
    ]
    return out


def count_macs(model: nn.Module, x: torch.Tensor) -> tuple[int, dict[str, int]]:
    """FLOPs / 2 of every op FlopCounterMode prices (conv, mm, addmm, bmm, baddbmm), by op."""
    torch.backends.mha.set_fastpath_enabled(False)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), counter:
        model(x)
    by_op = {str(op).removeprefix("aten."): int(n) // 2 for op, n in counter.get_flop_counts()["Global"].items()}
    return int(counter.get_total_flops()) // 2, by_op


def export(model: nn.Module, x: torch.Tensor, path: Path, exporter: str, opset: int) -> None:
    torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad():
        if exporter == "dynamo":
            program = torch.onnx.export(model, (x,), dynamo=True)
            assert program is not None
            program.save(str(path))
        else:
            torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=opset,
                              input_names=["input"], output_names=["output"])


class RandomImages:
    """onnxruntime's CalibrationDataReader: a few random inputs of the model's shape."""

    def __init__(self, input_name: str, shape: tuple[int, ...], count: int = 4) -> None:
        rng = np.random.default_rng(0)
        self.batches: Iterator[dict[str, np.ndarray]] = iter(
            [{input_name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.batches, None)


def quantize(float_path: Path, path: Path, shape: tuple[int, ...], float_ends: bool = False,
             style: str = "qdq") -> None:
    """onnxruntime's documented recipe: pre-process (shape inference, basic fusions), then static QDQ (`style`
    "qdq"), static QOperator ("qop") or dynamic quantization ("dynq"); with `float_ends` the first Conv and the
    last Gemm/MatMul are excluded from quantization (mixed precision)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_dynamic, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(RandomImages, CalibrationDataReader):
        pass

    prepared = path.with_suffix(".prep.onnx")
    quant_pre_process(str(float_path), str(prepared))
    excluded: list[str] = []
    if float_ends:
        nodes = onnx.load(str(prepared)).graph.node
        excluded = [next(n.name for n in nodes if n.op_type == "Conv"),
                    next(n.name for n in reversed(nodes) if n.op_type in ("Gemm", "MatMul"))]
    if style == "dynq":
        quantize_dynamic(str(prepared), str(path), nodes_to_exclude=excluded)
    else:
        quant_format = QuantFormat.QOperator if style == "qop" else QuantFormat.QDQ
        quantize_static(str(prepared), str(path), Reader("input", shape), quant_format=quant_format,
                        nodes_to_exclude=excluded)
    prepared.unlink()


def make(spec: Spec, out_dir: Path) -> Entry:
    torch.manual_seed(0)
    model = spec.build().eval()
    x = torch.randn(*spec.input_shape)
    macs, by_op = count_macs(model, x)
    start = time.perf_counter()
    path = out_dir / f"{spec.name}.onnx"
    twin = None
    quantized = re.fullmatch(r"legacy\+(qdq|qop|dynq)(-mixed)?", spec.exporter)
    if quantized:
        twin = re.split(r"-(?:qdq|qop|dynq)", spec.name)[0] + "-legacy"
        float_path = out_dir / f"{twin}.onnx"
        if not float_path.exists():
            export(model, x, float_path, "legacy", spec.opset)
        quantize(float_path, path, spec.input_shape, float_ends=bool(quantized[2]), style=quantized[1])
    else:
        export(model, x, path, spec.exporter, spec.opset)
    hw = spec.input_shape[-2:] if len(spec.input_shape) > 3 else (1, spec.input_shape[-1])
    return Entry(spec.name, spec.network, spec.exporter, path.name, (hw[0], hw[1]), spec.input_shape, macs, by_op,
                 twin, round(time.perf_counter() - start, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    args = parser.parse_args()
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest_path = out_dir / "manifest.json"
    manifest: dict[str, dict[str, object]] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    wanted = {n for n in args.only.split(",") if n}
    for spec in specs():
        if wanted and spec.name not in wanted:
            continue
        if spec.name in manifest and (out_dir / f"{spec.name}.onnx").exists():
            continue
        print(f"exporting {spec.name} ...", flush=True)
        manifest[spec.name] = asdict(make(spec, out_dir))
        manifest_path.write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
