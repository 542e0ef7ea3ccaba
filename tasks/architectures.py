"""More of the zoo: architectures whose operators differ from ResNet/MobileNet/BERT, so cost
models see more distinct tasks (TenSet: at a fixed data size, more tasks beat more programs per
task). Each is its family's structure in plain PyTorch, random weights, sized like its usual
small variant; tasks/networks.py registers them.

- VGG-style: plain 3x3 conv stacks, max pooling (wide convs at every resolution).
- DenseNet-style: dense blocks whose concatenation gives every 1x1 conv its own input width.
- EfficientNet-style: inverted residuals with squeeze-excite and SiLU, 3x3 and 5x5 depthwise.
- ConvNeXt-style: 4x4 patchify stem, 7x7 depthwise conv, layer norm, 4x MLP with GELU.
- ViT: 16x16 patch embedding, pre-norm encoder layers.
- GPT-2-style: pre-norm decoder layers with a causal mask.
- Wide and deep MLPs.
"""

from __future__ import annotations

import torch
from torch import nn

# ----------------------------------------------------------------------------- VGG-style

VGG11 = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")


class VGGStyle(nn.Module):
    """VGG-11's conv stack; the classifier is pooled to 1x1 first (VGG's 25088x4096 dense layer
    would only add 400 MB of weights and one task)."""

    def __init__(self, config=VGG11):
        super().__init__()
        layers, cin = [], 3
        for item in config:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, item, 3, 1, 1), nn.ReLU()]
                cin = item
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(cin, 4096), nn.ReLU(), nn.Linear(4096, 1000))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# ----------------------------------------------------------------------------- DenseNet-style


class _DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1),
                                  nn.BatchNorm2d(4 * growth), nn.ReLU(),
                                  nn.Conv2d(4 * growth, growth, 3, 1, 1))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class DenseNetStyle(nn.Module):
    """DenseNet-121's layout (growth 32, blocks of 6/12/24/16 layers, halving transitions)."""

    def __init__(self, blocks=(6, 12, 24, 16), growth: int = 32):
        super().__init__()
        c = 2 * growth
        layers: list[nn.Module] = [nn.Conv2d(3, c, 7, 2, 3), nn.BatchNorm2d(c), nn.ReLU(),
                                   nn.MaxPool2d(3, 2, 1)]
        for i, n in enumerate(blocks):
            for _ in range(n):
                layers.append(_DenseLayer(c, growth))
                c += growth
            if i < len(blocks) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1),
                           nn.AvgPool2d(2)]
                c //= 2
        self.features = nn.Sequential(*layers, nn.BatchNorm2d(c), nn.ReLU())
        self.fc = nn.Linear(c, 1000)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.fc(torch.flatten(x, 1))


# ----------------------------------------------------------------------------- EfficientNet-style

# (expansion, output channels, repeats, first stride, kernel): EfficientNet-B0
EFFICIENTNET_B0 = ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3),
                   (6, 112, 3, 1, 5), (6, 192, 4, 2, 5), (6, 320, 1, 1, 3))


class _SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeezed: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(s))))


class _MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, expansion: int, stride: int, kernel: int):
        super().__init__()
        mid = cin * expansion
        layers: list[nn.Module] = []
        if expansion != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
        layers += [nn.Conv2d(mid, mid, kernel, stride, kernel // 2, groups=mid, bias=False),
                   nn.BatchNorm2d(mid), nn.SiLU(), _SqueezeExcite(mid, max(1, cin // 4)),
                   nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class EfficientNetStyle(nn.Module):
    def __init__(self, config=EFFICIENTNET_B0):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32),
                                   nn.SiLU()]
        cin = 32
        for expansion, cout, repeats, stride, kernel in config:
            for i in range(repeats):
                layers.append(_MBConv(cin, cout, expansion, stride if i == 0 else 1, kernel))
                cin = cout
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.SiLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, 1000)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.fc(torch.flatten(x, 1))


# ----------------------------------------------------------------------------- ConvNeXt-style


class _ChannelsFirstNorm(nn.Module):
    """LayerNorm over the channels of an NCHW tensor (ConvNeXt's downsampling norm)."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.LayerNorm(channels)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class _ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, 1, 3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.scale = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)  # NHWC: norm and MLP act on channels
        return x + (self.scale * self.mlp(self.norm(y))).permute(0, 3, 1, 2)


class ConvNeXtStyle(nn.Module):
    """ConvNeXt-T's widths (96/192/384/768); two blocks per stage, three in the third (deeper
    stages only repeat the same tasks)."""

    def __init__(self, dims=(96, 192, 384, 768), depths=(2, 2, 3, 2)):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), _ChannelsFirstNorm(dims[0])]
        for i, (dim, depth) in enumerate(zip(dims, depths)):
            if i:
                layers += [_ChannelsFirstNorm(dims[i - 1]), nn.Conv2d(dims[i - 1], dim, 2, 2)]
            layers += [_ConvNeXtBlock(dim) for _ in range(depth)]
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dims[-1])
        self.fc = nn.Linear(dims[-1], 1000)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.fc(self.norm(x))


# ----------------------------------------------------------------------------- transformers


class _PreNormLayer(nn.Module):
    """x + attention(norm(x)), then x + MLP(norm(x)); causal for a decoder."""

    def __init__(self, hidden: int, heads: int, ffn: int, causal: bool):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ffn1, self.ffn2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, s, 3, self.heads, h // self.heads) \
            .permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5
        if self.causal:  # a token attends to itself and what came before
            mask = torch.ones(s, s, dtype=torch.bool).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        ctx = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.out(ctx)
        return x + self.ffn2(nn.functional.gelu(self.ffn1(self.ln2(x)), approximate="tanh"))


class ViT(nn.Module):
    """ViT-S/16: 16x16 patches, width 384, 6 heads, MLP 1536, 12 layers, a class token."""

    def __init__(self, hidden: int = 384, heads: int = 6, ffn: int = 1536, layers: int = 12,
                 patch: int = 16, size: int = 224):
        super().__init__()
        self.embed = nn.Conv2d(3, hidden, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos = nn.Parameter(torch.zeros(1, (size // patch) ** 2 + 1, hidden))
        self.layers = nn.Sequential(*[_PreNormLayer(hidden, heads, ffn, causal=False)
                                      for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 1000)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.layers(x))[:, 0])


class GPT2Style(nn.Module):
    """GPT-2 small's decoder stack (width 768, 12 heads, MLP 3072), four layers of its twelve
    (the rest repeat the same tasks); input: token embeddings, no vocabulary lookup."""

    def __init__(self, hidden: int = 768, heads: int = 12, ffn: int = 3072, layers: int = 4):
        super().__init__()
        self.layers = nn.Sequential(*[_PreNormLayer(hidden, heads, ffn, causal=True)
                                      for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return self.norm(self.layers(x))


# ----------------------------------------------------------------------------- MLPs


class WideMLP(nn.Module):
    """Two wide hidden layers (4096): large dense layers, memory-bound at batch 1."""

    def __init__(self, features: int, width: int = 4096):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width),
                                  nn.ReLU(), nn.Linear(width, 1000))

    def forward(self, x):
        return self.body(x)


class DeepMLP(nn.Module):
    """Eight hidden layers of changing widths with GELU: many distinct dense shapes."""

    WIDTHS = (1024, 768, 1536, 512, 2048, 384, 1024, 256)

    def __init__(self, features: int):
        super().__init__()
        layers: list[nn.Module] = []
        for width in self.WIDTHS:
            layers += [nn.Linear(features, width), nn.GELU()]
            features = width
        self.body = nn.Sequential(*layers, nn.Linear(features, 10))

    def forward(self, x):
        return self.body(x)
