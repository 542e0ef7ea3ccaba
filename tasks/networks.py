"""The workload zoo: DNNs defined here in plain PyTorch, random weights, nothing downloaded.

Only shapes matter for tuning, so every network is built from its layer structure. Each entry
makes a torch module and example inputs for a batch size and an input size (image side for
vision nets, sequence length for the encoder, matrix/feature size for single-op workloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from core.errors import TenforgeError
from tasks.architectures import (
    ConvNeXtStyle,
    DeepMLP,
    DenseNetStyle,
    EfficientNetStyle,
    GPT2Style,
    VGGStyle,
    ViT,
    WideMLP,
)

# ----------------------------------------------------------------------------- ResNet


class _BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = _downsample(cin, planes, stride)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class _Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int, groups: int = 1,
                 width_per_group: int = 64):
        super().__init__()
        width = planes * width_per_group // 64 * groups  # torchvision's rule; ResNet-50: planes
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.down = _downsample(cin, planes * 4, stride)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class _ResNeXtBottleneck(_Bottleneck):
    """ResNeXt-50 32x4d's block: twice ResNet-50's width, its 3x3 conv in 32 groups (grouped
    convolutions, an operator no other zoo network has)."""

    def __init__(self, cin: int, planes: int, stride: int):
        super().__init__(cin, planes, stride, groups=32, width_per_group=4)


def _downsample(cin: int, cout: int, stride: int) -> nn.Module | None:
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block: type, layers: list[int], num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for i, blocks in enumerate(layers):
            planes = 64 * 2**i
            for b in range(blocks):
                stages.append(block(cin, planes, 2 if (b == 0 and i > 0) else 1))
                cin = planes * block.expansion
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# ----------------------------------------------------------------------------- MobileNet-V2


class _InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                   nn.BatchNorm2d(hidden), nn.ReLU6(),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    # (expansion, channels, repeats, first stride), as in the paper's Table 2
    CONFIG = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
              (6, 160, 3, 2), (6, 320, 1, 1))

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.ReLU6()]
        cin = 32
        for t, c, n, s in self.CONFIG:
            for i in range(n):
                layers.append(_InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.fc(torch.flatten(x, 1))


# ----------------------------------------------------------------------------- Inception-style


def _conv_bn(cin: int, cout: int, k: int | tuple, s: int = 1, p: int | tuple = 0) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class _InceptionA(nn.Module):
    """Inception-v3's 35x35 block: 1x1 | 5x5 | double 3x3 | pool branches, concatenated."""

    def __init__(self, cin: int, pool_features: int):
        super().__init__()
        self.b1 = _conv_bn(cin, 64, 1)
        self.b5 = nn.Sequential(_conv_bn(cin, 48, 1), _conv_bn(48, 64, 5, p=2))
        self.b3 = nn.Sequential(_conv_bn(cin, 64, 1), _conv_bn(64, 96, 3, p=1),
                                _conv_bn(96, 96, 3, p=1))
        self.bp = nn.Sequential(nn.AvgPool2d(3, 1, 1), _conv_bn(cin, pool_features, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b5(x), self.b3(x), self.bp(x)], 1)


class _InceptionC(nn.Module):
    """Inception-v3's 17x17 block with factorised 1x7 / 7x1 convolutions."""

    def __init__(self, cin: int, c7: int):
        super().__init__()
        self.b1 = _conv_bn(cin, 192, 1)
        self.b7 = nn.Sequential(_conv_bn(cin, c7, 1), _conv_bn(c7, c7, (1, 7), p=(0, 3)),
                                _conv_bn(c7, 192, (7, 1), p=(3, 0)))
        self.bp = nn.Sequential(nn.AvgPool2d(3, 1, 1), _conv_bn(cin, 192, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b7(x), self.bp(x)], 1)


class InceptionStyle(nn.Module):
    """A shortened Inception-v3: its stem, three A blocks, a reduction, two C blocks."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 32, 3, 2), _conv_bn(32, 32, 3),
                                  _conv_bn(32, 64, 3, p=1), nn.MaxPool2d(3, 2),
                                  _conv_bn(64, 80, 1), _conv_bn(80, 192, 3), nn.MaxPool2d(3, 2))
        self.a = nn.Sequential(_InceptionA(192, 32), _InceptionA(256, 64), _InceptionA(288, 64))
        self.reduce = _conv_bn(288, 768, 3, 2)
        self.c = nn.Sequential(_InceptionC(768, 128), _InceptionC(576, 160))
        self.fc = nn.Linear(576, num_classes)

    def forward(self, x):
        x = self.c(self.reduce(self.a(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


# ----------------------------------------------------------------------------- BERT-style


class _EncoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.ffn1 = nn.Linear(hidden, ffn)
        self.ffn2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ffn2(nn.functional.gelu(self.ffn1(x))))


class BertEncoder(nn.Module):
    """BERT-base's encoder stack (input: token embeddings, so no vocabulary lookup)."""

    def __init__(self, layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int = 3072):
        super().__init__()
        self.layers = nn.Sequential(*[_EncoderLayer(hidden, heads, ffn) for _ in range(layers)])

    def forward(self, x):
        return self.layers(x)


# ----------------------------------------------------------------------------- small / single-op


class MLP(nn.Module):
    """A 3-layer perceptron: the smallest real network, for tests and the default pipeline."""

    def __init__(self, features: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Linear(256, 128),
                                  nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.body(x)


class TinyCNN(nn.Module):
    """Two conv layers and a classifier: a 3-layer conv net for tests and the default pipeline."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 2, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class _MatMul(nn.Module):
    def forward(self, a, b):
        return a @ b


class _DenseBiasRelu(nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.fc = nn.Linear(size, size)

    def forward(self, x):
        return torch.relu(self.fc(x))


# ----------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class NetworkDef:
    """How to build one zoo entry: a module and its example inputs for (batch, size)."""

    name: str
    description: str
    default_size: int  # image side / sequence length / matrix or feature size
    build: Callable[[int, int], tuple[nn.Module, tuple[torch.Tensor, ...]]]


def _image(model: Callable[[], nn.Module]) -> Callable:
    return lambda batch, size: (model(), (torch.randn(batch, 3, size, size),))


ZOO: dict[str, NetworkDef] = {d.name: d for d in (
    NetworkDef("resnet18", "ResNet-18", 224, _image(lambda: ResNet(_BasicBlock, [2, 2, 2, 2]))),
    NetworkDef("resnet50", "ResNet-50", 224, _image(lambda: ResNet(_Bottleneck, [3, 4, 6, 3]))),
    NetworkDef("resnext50", "ResNeXt-50 32x4d (grouped 3x3 convs)", 224,
               _image(lambda: ResNet(_ResNeXtBottleneck, [3, 4, 6, 3]))),
    NetworkDef("mobilenet_v2", "MobileNet-V2", 224, _image(MobileNetV2)),
    NetworkDef("inception", "Inception-v3-style (stem, 3xA, reduction, 2xC)", 299,
               _image(InceptionStyle)),
    NetworkDef("bert", "BERT-base encoder (12 layers, hidden 768), size = sequence length", 128,
               lambda b, s: (BertEncoder(), (torch.randn(b, s, 768),))),
    # TenSet's held-out BERT-tiny (its scripts' BertConfig): 6 layers, hidden 512, 8 heads
    NetworkDef("bert_tiny", "BERT-tiny encoder (6 layers, hidden 512, 8 heads, FFN 2048), "
               "size = sequence length", 128,
               lambda b, s: (BertEncoder(6, 512, 8, 2048), (torch.randn(b, s, 512),))),
    NetworkDef("mlp", "3-layer perceptron, size = input features", 512,
               lambda b, s: (MLP(s), (torch.randn(b, s),))),
    NetworkDef("tiny_cnn", "2 conv layers + classifier", 32, _image(TinyCNN)),
    # tasks/architectures.py: families whose operators differ from the ones above
    NetworkDef("vgg11", "VGG-11-style conv stacks (classifier pooled to 1x1)", 224,
               _image(VGGStyle)),
    NetworkDef("densenet121", "DenseNet-121-style dense blocks (growth 32)", 224,
               _image(DenseNetStyle)),
    NetworkDef("efficientnet_b0", "EfficientNet-B0-style MBConv with squeeze-excite, SiLU", 224,
               _image(EfficientNetStyle)),
    NetworkDef("convnext", "ConvNeXt-T-style (7x7 depthwise, layer norm, GELU MLP); size: a "
               "multiple of 32", 224, _image(ConvNeXtStyle)),
    NetworkDef("vit", "ViT-S/16 (width 384, 12 layers); size: a multiple of 16", 224,
               lambda b, s: (ViT(size=s), (torch.randn(b, 3, s, s),))),
    NetworkDef("gpt2", "GPT-2-small-style causal decoder, 4 layers; size = sequence length", 128,
               lambda b, s: (GPT2Style(), (torch.randn(b, s, 768),))),
    NetworkDef("mlp_wide", "perceptron with two 4096-wide hidden layers; size = input features",
               1024, lambda b, s: (WideMLP(s), (torch.randn(b, s),))),
    NetworkDef("mlp_deep", "perceptron with eight hidden layers of changing widths (GELU); "
               "size = input features", 512, lambda b, s: (DeepMLP(s), (torch.randn(b, s),))),
    NetworkDef("matmul", "one (size x size) @ (size x size) matmul; batch ignored", 256,
               lambda b, s: (_MatMul(), (torch.randn(s, s), torch.randn(s, s)))),
    NetworkDef("conv2d", "one 3x3 conv, 64->64 channels, size x size", 56,
               lambda b, s: (nn.Conv2d(64, 64, 3, 1, 1, bias=False),
                             (torch.randn(b, 64, s, s),))),
    NetworkDef("depthwise_conv2d", "one 3x3 depthwise conv, 128 channels, size x size", 56,
               lambda b, s: (nn.Conv2d(128, 128, 3, 1, 1, groups=128, bias=False),
                             (torch.randn(b, 128, s, s),))),
    NetworkDef("dense_bias_relu", "one dense + bias + relu, size -> size", 512,
               lambda b, s: (_DenseBiasRelu(s), (torch.randn(b, s),))),
)}


def network_def(name: str) -> NetworkDef:
    if name not in ZOO:
        raise TenforgeError(f"unknown network {name!r}; known: {', '.join(sorted(ZOO))}")
    return ZOO[name]


def build_network(name: str, batch: int, size: int | None = None
                  ) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """An eval-mode module with random weights and example inputs (seeded: same every call)."""
    if batch < 1:
        raise TenforgeError(f"batch size must be >= 1, got {batch}")
    definition = network_def(name)
    size = definition.default_size if size is None else size
    if size < 1:
        raise TenforgeError(f"input size must be >= 1, got {size}")
    torch.manual_seed(0)
    model, inputs = definition.build(batch, size)
    return model.eval(), inputs
