"""Datagen writes the same bytes in every process, so that data can be checksummed (issue 35, 13).

`tf.train.Example`'s feature map is a hash table: serialised in its own
order, the same examples came out as other bytes in another process.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _datagen(data_dir: Path, tmp_dir: Path, hash_seed: str) -> subprocess.Popen:
    environment = dict(os.environ, PYTHONHASHSEED=hash_seed)
    return subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "datagen"), "--problem=synthetic_syntax_reorder",
         f"--data_dir={data_dir}", f"--tmp_dir={tmp_dir}", "--max_examples=30"],
        cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _digests(directory: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(directory.iterdir()) if "-of-" in path.name}


def test_two_processes_write_byte_identical_shards(tmp_path):
    # Both start at once: most of their time is importing TensorFlow.
    runs = {seed: _datagen(tmp_path / f"data_{seed}", tmp_path, seed) for seed in ("1", "2")}
    for seed, run in runs.items():
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    first, second = (_digests(tmp_path / f"data_{seed}") for seed in runs)
    for split in ("train", "dev", "test"):
        assert any(f"-{split}-" in name for name in first), sorted(first)
    assert first == second
