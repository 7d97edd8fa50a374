"""Choosing the tf.distribute strategy (the multi-replica run is in test_trainer)."""

import json
import shutil

import pytest
import tensorflow as tf

from syntax_t2t.training import distribution


def test_cluster_size_counts_every_task_of_tf_config():
    assert distribution.cluster_size({}) == 1
    config = {"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
              "task": {"type": "worker", "index": 0}}
    assert distribution.cluster_size({"TF_CONFIG": json.dumps(config)}) == 3
    assert distribution.cluster_size({"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]}})}) == 1


def test_malformed_tf_config_is_reported():
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        distribution.cluster_size({"TF_CONFIG": "{cluster"})
    with pytest.raises(ValueError, match="JSON object"):
        distribution.cluster_size({"TF_CONFIG": "[1, 2]"})


def test_auto_and_none_on_one_device_use_the_default_strategy(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    several_gpus = len(tf.config.list_logical_devices("GPU")) > 1
    for choice in ("none",) if several_gpus else ("auto", "none"):
        strategy = distribution.make_strategy(choice)
        assert strategy is tf.distribute.get_strategy()
        assert strategy.num_replicas_in_sync == 1
        assert distribution.is_chief(strategy)
        assert distribution.writable_directory(strategy, "/run") == "/run"


def test_mirrored_uses_every_gpu_or_else_every_cpu_device():
    strategy = distribution.make_strategy("mirrored")
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    assert strategy.num_replicas_in_sync == len(devices)


def test_unknown_choice():
    with pytest.raises(ValueError, match="--distribution='ring'"):
        distribution.make_strategy("ring")


class _StrategyOf:
    """Stands for a multi-worker strategy: only its cluster resolver is read."""

    def __init__(self, task_type, task_id, cluster):
        self.cluster_resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)


@pytest.mark.parametrize("task_type, task_id, cluster, chief", [
    ("chief", 0, {"chief": ["a:1"], "worker": ["b:1"]}, True),
    ("worker", 0, {"chief": ["a:1"], "worker": ["b:1"]}, False),
    ("worker", 0, {"worker": ["a:1", "b:1"]}, True),
    ("worker", 1, {"worker": ["a:1", "b:1"]}, False),
])
def test_only_the_chief_writes_to_the_run_directory(tmp_path, task_type, task_id, cluster, chief):
    strategy = _StrategyOf(task_type, task_id, cluster)
    assert distribution.is_chief(strategy) is chief
    directory = distribution.writable_directory(strategy, str(tmp_path))
    assert (directory == str(tmp_path)) is chief
    if not chief:
        assert f"{task_type}_{task_id}_checkpoints_" in directory
        shutil.rmtree(directory)
