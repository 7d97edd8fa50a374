"""A PyTorch peer: `torch.nn.Transformer` of the same shape, trained on the same batch.

The peer mirrors `transformer` with the benchmark's hparams: the same
widths, heads and layer counts, pre-layer-norm blocks (`norm_first`) with a
final norm on both stacks, sinusoidal positions, embeddings scaled by
sqrt(D) and shared with the softmax, dropout, label-smoothed cross-entropy
over non-padding tokens and Adam. Its train step (forward, backward, update)
runs eagerly, as PyTorch does by default, with as many intra-op and inter-op
threads as TensorFlow has (`set_threads`; the benchmark sizes both).
"""

import math
import os
import time

# PyTorch's OpenMP threads spin at every barrier by default (an "active"
# wait): on a machine whose cores other processes share, a spinning thread
# holds a core its partner needs, and a `transformer_tiny` peer step took
# 0.25 to 2.3 s instead of 0.07 to 0.10 s with a passive wait (load 6 on 2
# cores); the spinning also slowed the TensorFlow steps timed after it.
# TensorFlow's pool sleeps when idle, so the peer gets a passive wait too.
# It only takes effect if set before libgomp loads (the first `import torch`).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

PAD_ID = 0


def _sinusoid(length, depth):
    """T2T's sinusoidal position signal, [length, depth]."""
    half = depth // 2
    scale = math.log(10000.0) / max(half - 1, 1)
    inverse = torch.exp(torch.arange(half, dtype=torch.float32) * -scale)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inverse[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class TorchTransformer(nn.Module):
    """Encoder-decoder `nn.Transformer` with shared target embedding and softmax.

    Args:
        hparams: the benchmark's `HParams` (`hidden_size`, `filter_size`,
            `num_heads`, `num_encoder_layers`, `num_decoder_layers`,
            `layer_prepostprocess_dropout`).
        vocab_sizes: `{"inputs": .., "targets": ..}`.
    """

    def __init__(self, hparams, vocab_sizes):
        super().__init__()
        self.hidden_size = hparams.hidden_size
        self.source_embedding = nn.Embedding(vocab_sizes["inputs"], hparams.hidden_size,
                                             padding_idx=PAD_ID)
        self.target_embedding = nn.Embedding(vocab_sizes["targets"], hparams.hidden_size,
                                             padding_idx=PAD_ID)
        self.dropout = nn.Dropout(hparams.layer_prepostprocess_dropout)
        self.transformer = nn.Transformer(
            d_model=hparams.hidden_size, nhead=hparams.num_heads,
            num_encoder_layers=hparams.num_encoder_layers,
            num_decoder_layers=hparams.num_decoder_layers,
            dim_feedforward=hparams.filter_size, dropout=hparams.layer_prepostprocess_dropout,
            batch_first=True, norm_first=True)

    def _embed(self, embedding, ids):
        positions = _sinusoid(ids.shape[1], self.hidden_size)
        return self.dropout(embedding(ids) * math.sqrt(self.hidden_size) + positions)

    def forward(self, inputs, targets):
        """Logits [B, T, V] for teacher-forced `targets` (shifted right here)."""
        decoder_ids = nn.functional.pad(targets, (1, 0))[:, :-1]
        source_padding = inputs.eq(PAD_ID)
        causal = nn.Transformer.generate_square_subsequent_mask(targets.shape[1])
        outputs = self.transformer(
            self._embed(self.source_embedding, inputs), self._embed(self.target_embedding,
                                                                    decoder_ids),
            tgt_mask=causal, src_key_padding_mask=source_padding,
            memory_key_padding_mask=source_padding, tgt_is_causal=True)
        return outputs @ self.target_embedding.weight.t()


def set_threads(threads):
    """Sizes PyTorch's intra-op and inter-op thread pools; returns the sizes in effect.

    The inter-op pool can only be sized before PyTorch first uses it; later
    calls keep its size.

    Returns:
        `{"intra_op": n, "inter_op": n, "omp_wait_policy": the OpenMP wait policy}`.
    """
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        pass
    return {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "")}


class TorchTrainStep:
    """The peer's train step on one fixed batch.

    Args:
        hparams: as `TorchTransformer`, plus `label_smoothing`, `adam_beta1`,
            `adam_beta2`, `adam_epsilon`.
        vocab_sizes: as `TorchTransformer`.
        batch: `{"inputs", "targets"}` int32 [B, L] arrays.
        seed: seeds the initialisation and dropout.
    """

    def __init__(self, hparams, vocab_sizes, batch, seed=0):
        torch.manual_seed(seed)
        self.model = TorchTransformer(hparams, vocab_sizes)
        self.model.train()
        self.inputs = torch.from_numpy(np.asarray(batch["inputs"], np.int64))
        self.targets = torch.from_numpy(np.asarray(batch["targets"], np.int64))
        self.loss_function = nn.CrossEntropyLoss(ignore_index=PAD_ID,
                                                 label_smoothing=hparams.label_smoothing)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4,
                                          betas=(hparams.adam_beta1, hparams.adam_beta2),
                                          eps=hparams.adam_epsilon)

    def step(self):
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(self.inputs, self.targets)
        loss = self.loss_function(logits.reshape(-1, logits.shape[-1]), self.targets.reshape(-1))
        loss.backward()
        self.optimizer.step()
        return loss

    def run(self, steps):
        """Runs `steps` train steps; returns the seconds per step."""
        start = time.perf_counter()
        for _ in range(steps):
            self.step()
        return (time.perf_counter() - start) / steps

    def parameter_count(self):
        return int(sum(parameter.numel() for parameter in self.model.parameters()))
