"""Neural cost models over a candidate's sequence of per-store feature rows (PyTorch, CPU).

All three read the same input, a candidate as a padded sequence of standardized 164-d store rows
(plus the hardware feature vector), and differ in how they combine the rows:

- mlp: a per-store MLP, summed over stores (MetaSchedule's / TenSet's segment-sum MLP).
- attention: a transformer encoder over the stores, so every store attends to the whole
  schedule (TLP, Bai et al.'s attention modules), then mean pooling.
- bilstm_attention: 3-layer bidirectional LSTM, then 2-head self-attention, then mean pooling
  (Verma et al.'s tuner: 3 BiLSTM layers, 2 heads, Adam 1e-3).

One training loop for all: batches keep a task's candidates together so the ranking loss
(RankNet-style pairwise logistic loss within each task) has pairs; validation top-1 peak score
after every epoch drives early stopping, `report` (Optuna pruning) and the kept weights.

With `head_per_hardware` the model has one output head per hardware profile over a shared
encoder (MTL-TLP); transfer adds a head for the new profile. Fine-tuning strategies: `full`
(every weight, lower learning rate), `head` (the output head only), `multi_head` (a new head
for the target profile, the shared encoder at a tenth of the learning rate).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from core.errors import TenforgeError
from models.base import CostModel, ModelConfig, Report, hardware_inputs, valid_peak1
from models.dataset import FEATURE_DIM, Dataset

HW_EMBED = 16
MAX_STORES = 64  # longer candidates (rare) keep their first 64 stores


@dataclass(frozen=True)
class NeuralConfig(ModelConfig):
    hidden: int = 128
    num_layers: int = 2
    heads: int = 4
    dropout: float = 0.1
    lr: float = 1e-3
    weight_decay: float = 0.0
    epochs: int = 40
    batch_size: int = 512
    patience: int = 6
    head_per_hardware: bool = False


@dataclass(frozen=True)
class BiLSTMConfig(NeuralConfig):
    num_layers: int = 3
    heads: int = 2


class _Net(nn.Module):
    def __init__(self, family: str, config: NeuralConfig, hw_dim: int, head_names: list[str]):
        super().__init__()
        self.head_names = list(head_names)
        self.hidden = config.hidden
        h = config.hidden
        self.family = family
        self.register_buffer("mean", torch.zeros(FEATURE_DIM))
        self.register_buffer("std", torch.ones(FEATURE_DIM))
        if family == "mlp":
            self.encoder = nn.Sequential(nn.Linear(FEATURE_DIM, h), nn.ReLU(),
                                         nn.Linear(h, h), nn.ReLU())
        else:
            self.embed = nn.Sequential(nn.Linear(FEATURE_DIM, h), nn.ReLU())
        if family == "attention":
            layer = nn.TransformerEncoderLayer(h, config.heads, dim_feedforward=2 * h,
                                               dropout=config.dropout, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, config.num_layers,
                                                 enable_nested_tensor=False)
        elif family == "bilstm_attention":
            self.lstm = nn.LSTM(h, h // 2, num_layers=config.num_layers, batch_first=True,
                                bidirectional=True, dropout=config.dropout)
            self.attn = nn.MultiheadAttention(h, config.heads, dropout=config.dropout,
                                              batch_first=True)
        self.hw = nn.Sequential(nn.Linear(hw_dim, HW_EMBED), nn.ReLU()) if hw_dim else None
        self.head_input = h + (HW_EMBED if hw_dim else 0)
        self.dropout = config.dropout
        self.heads = nn.ModuleList(self.new_head() for _ in self.head_names)

    def new_head(self) -> nn.Module:
        return nn.Sequential(nn.Linear(self.head_input, self.hidden), nn.ReLU(),
                             nn.Dropout(self.dropout), nn.Linear(self.hidden, 1))

    def add_head(self, name: str) -> nn.Module:
        """A head for a new hardware, starting from the mean of the existing heads."""
        head = self.new_head()
        with torch.no_grad():
            for name_, param in head.named_parameters():
                stacked = torch.stack([dict(old.named_parameters())[name_] for old in self.heads])
                param.copy_(stacked.mean(0))
        self.heads.append(head)
        self.head_names.append(name)
        return head

    def forward(self, x: torch.Tensor, mask: torch.Tensor, hw: torch.Tensor | None,
                head: torch.Tensor | None = None) -> torch.Tensor:
        """x [B, S, 164] padded, mask [B, S] True on real stores, hw [B, H], head [B] (index of
        each row's head when there is one per hardware) -> scores [B]."""
        x = (x - self.mean) / self.std
        keep = mask.unsqueeze(-1).float()
        if self.family == "mlp":
            pooled = (self.encoder(x) * keep).sum(1)
        else:
            z = self.embed(x)
            if self.family == "attention":
                z = self.encoder(z, src_key_padding_mask=~mask)
            else:
                lengths = mask.sum(1).clamp(min=1).cpu()
                packed = nn.utils.rnn.pack_padded_sequence(z, lengths, batch_first=True,
                                                           enforce_sorted=False)
                z, _ = self.lstm(packed)
                z, _ = nn.utils.rnn.pad_packed_sequence(z, batch_first=True,
                                                        total_length=mask.shape[1])
                z, _ = self.attn(z, z, z, key_padding_mask=~mask, need_weights=False)
            pooled = (z * keep).sum(1) / keep.sum(1).clamp(min=1)
        if self.hw is not None:
            pooled = torch.cat([pooled, self.hw(hw)], dim=1)
        if head is None:
            return self.heads[0](pooled).squeeze(-1)
        every = torch.cat([h(pooled) for h in self.heads], dim=1)  # [B, heads]
        own = every.gather(1, head.clamp(min=0).unsqueeze(1)).squeeze(1)
        return torch.where(head >= 0, own, every.mean(1))


def _padded(data: Dataset, index: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    sizes = np.minimum(data.n_stores()[index], MAX_STORES)
    width = max(int(sizes.max()) if sizes.size else 1, 1)
    x = np.zeros((index.size, width, FEATURE_DIM), np.float32)
    mask = np.zeros((index.size, width), bool)
    for row, (i, n) in enumerate(zip(index, sizes)):
        start = data.store_offsets[i]
        x[row, :n] = data.store_features[start:start + n]
        mask[row, :n] = True
    mask[:, 0] = True  # a candidate with no store still gets one (zero) row to pool
    return torch.from_numpy(x), torch.from_numpy(mask)


def _pairwise_loss(scores: torch.Tensor, labels: torch.Tensor, groups: torch.Tensor
                   ) -> torch.Tensor:
    """Mean logistic loss over same-task pairs (i, j) with label_i > label_j."""
    better = (labels[:, None] > labels[None, :] + 1e-6) & (groups[:, None] == groups[None, :])
    if not better.any():
        return scores.sum() * 0.0
    diff = scores[:, None] - scores[None, :]
    return nn.functional.softplus(-diff[better]).mean()


class _NeuralCostModel(CostModel):
    config_class = NeuralConfig
    STRATEGIES = ("full", "head", "multi_head")

    def _build(self, data: Dataset) -> None:
        self.hw_dim = data.hardware_features.shape[1] if self.config.hardware_features else 0
        present = [data.hardware_names[h] for h in np.unique(data.candidate_hardware())]
        heads = present if self.config.head_per_hardware else ["*"]
        torch.manual_seed(self.config.seed)
        self.net = _Net(self.kind, self.config, self.hw_dim, heads)

    def _head_index(self, data: Dataset, index: np.ndarray) -> torch.Tensor | None:
        """Each row's head; -1 for a profile with no head of its own (zero-shot: the mean of
        all heads' scores)."""
        if not self.config.head_per_hardware:
            return None
        names = self.net.head_names
        lookup = np.array([names.index(n) if n in names else -1 for n in data.hardware_names])
        return torch.from_numpy(lookup[data.candidate_hardware()[index]].astype(np.int64))

    def _batches(self, data: Dataset, rng: np.random.Generator) -> list[np.ndarray]:
        """Shuffled batches in which a task's candidates stay together (for ranking pairs)."""
        groups = rng.permutation(np.unique(data.group))
        rank = np.empty(groups.max() + 1, np.int64)
        rank[groups] = np.arange(groups.size)
        order = np.lexsort((rng.random(len(data)), rank[data.group]))
        return [order[i:i + self.config.batch_size]
                for i in range(0, order.size, self.config.batch_size)]

    def _scores(self, data: Dataset, index: np.ndarray) -> torch.Tensor:
        x, mask = _padded(data, index)
        if self.hw_dim and data.hardware_features.shape[1] != self.hw_dim:
            raise TenforgeError(f"this {self.kind} model was built for {self.hw_dim} hardware "
                                f"features; the data has {data.hardware_features.shape[1]}")
        hw = (torch.from_numpy(hardware_inputs(data)[index]) if self.hw_dim else None)
        return self.net(x, mask, hw, self._head_index(data, index))

    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict:
        self._build(train)
        rows = train.store_features
        self.net.mean.copy_(torch.from_numpy(rows.mean(0)))
        self.net.std.copy_(torch.from_numpy(np.where(rows.std(0) > 1e-6, rows.std(0), 1.0)))
        optimizer = torch.optim.Adam(self.net.parameters(), lr=self.config.lr,
                                     weight_decay=self.config.weight_decay)
        return self._train_loop(train, valid, report, optimizer)

    def _fine_tune(self, train: Dataset, valid: Dataset | None, strategy: str,
                   report: Report | None) -> dict:
        c = self.config
        if strategy == "full":
            groups = [{"params": list(self.net.parameters()), "lr": c.lr * 0.3}]
        elif strategy == "head":
            for param in self.net.parameters():
                param.requires_grad_(False)
            for param in self.net.heads.parameters():
                param.requires_grad_(True)
            groups = [{"params": list(self.net.heads.parameters()), "lr": c.lr}]
        else:  # multi_head
            if not c.head_per_hardware:
                raise TenforgeError(f"strategy multi_head needs a model pre-trained with "
                                    f"head_per_hardware=True; this {self.kind} model has one head")
            present = [train.hardware_names[h] for h in np.unique(train.candidate_hardware())]
            new = [h for h in present if h not in self.net.head_names]
            fresh = [self.net.add_head(name) for name in new]
            fresh_ids = {id(p) for head in fresh for p in head.parameters()}
            shared = [p for p in self.net.parameters() if id(p) not in fresh_ids]
            groups = [{"params": [p for head in fresh for p in head.parameters()], "lr": c.lr},
                      {"params": shared, "lr": c.lr * 0.1}]
        optimizer = torch.optim.Adam(groups, weight_decay=c.weight_decay)
        try:
            return self._train_loop(train, valid, report, optimizer)
        finally:
            for param in self.net.parameters():
                param.requires_grad_(True)

    def _train_loop(self, train: Dataset, valid: Dataset | None, report: Report | None,
                    optimizer: torch.optim.Optimizer) -> dict:
        c = self.config
        rng = np.random.default_rng(c.seed)
        labels = torch.from_numpy(train.label)
        groups = torch.from_numpy(train.group.astype(np.int64))
        best, best_epoch, best_state, losses = -1.0, 0, None, []
        for epoch in range(1, c.epochs + 1):
            self.net.train()
            total = 0.0
            for index in self._batches(train, rng):
                scores = self._scores(train, index)
                idx = torch.from_numpy(index)
                if c.loss == "rank":
                    loss = _pairwise_loss(scores, labels[idx], groups[idx])
                else:
                    loss = nn.functional.mse_loss(scores, labels[idx])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += float(loss.detach()) * index.size
            losses.append(total / len(train))
            if valid is None:
                continue
            value = valid_peak1(self._predict, valid)
            if value > best + 1e-9:
                best, best_epoch, best_state = value, epoch, copy.deepcopy(self.net.state_dict())
            if report is not None:
                report(epoch, value)
            if epoch - best_epoch >= c.patience:
                break
        if best_state is not None:
            self.net.load_state_dict(best_state)
        info = {"epochs": len(losses), "final_train_loss": round(losses[-1], 6)}
        if valid is not None:
            info.update(best_epoch=best_epoch, valid_peak1=best)
        return info

    @torch.no_grad()
    def _predict(self, data: Dataset) -> np.ndarray:
        self.net.eval()
        out = np.empty(len(data))
        for start in range(0, len(data), 2048):
            index = np.arange(start, min(start + 2048, len(data)))
            out[index] = self._scores(data, index).numpy()
        return out

    def _save_weights(self, path: Path) -> None:
        torch.save({"hw_dim": self.hw_dim, "head_names": self.net.head_names,
                    "state": self.net.state_dict()}, path / "weights.pt")

    def _load_weights(self, path: Path) -> None:
        saved = torch.load(path / "weights.pt", weights_only=True)
        self.hw_dim = int(saved["hw_dim"])
        self.net = _Net(self.kind, self.config, self.hw_dim, list(saved["head_names"]))
        self.net.load_state_dict(saved["state"])


class MLPCostModel(_NeuralCostModel):
    kind = "mlp"


class AttentionCostModel(_NeuralCostModel):
    kind = "attention"


class BiLSTMAttentionCostModel(_NeuralCostModel):
    kind = "bilstm_attention"
    config_class = BiLSTMConfig
