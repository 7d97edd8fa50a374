"""`bin/datagen --overwrite` builds the new data aside and moves it in whole (#35 item 8).

Before, `--overwrite` first removed the completion record and wrote the new
vocabularies over the old ones: a full disk half-way left neither the old
data nor the new.
"""

import errno
import hashlib
import os

import pytest

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.datagen import writer

pytest.importorskip("tensorflow")
OPTIONS = dict(train_size=60, dev_size=10, test_size=5, max_length=8)


def problem(**options):
    registration.import_all()
    return registry.problems.get("synthetic_syntax_reorder")(**{**OPTIONS, **options})


def digest(directory):
    return {name: hashlib.sha256(open(os.path.join(directory, name), "rb").read()).hexdigest()
            for name in sorted(os.listdir(directory))
            if os.path.isfile(os.path.join(directory, name)) and not name.startswith(".")}


def test_a_full_disk_during_overwrite_leaves_the_old_data_complete(tmp_path, monkeypatch):
    data = str(tmp_path / "data")
    problem().generate_data(data, str(tmp_path / "tmp"))
    before = digest(data)

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", os.path.join(data, "shard"))

    monkeypatch.setattr(writer, "_write_split", full_disk)
    with pytest.raises(OSError, match="No space left"):
        problem(train_size=80).generate_data(data, str(tmp_path / "tmp"), overwrite=True)
    assert digest(data) == before
    assert problem().completion_record(data)["counts"]["train"] == 60
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []  # no staging left


def test_overwrite_replaces_the_data_whole_and_leaves_no_old_file(tmp_path):
    data = str(tmp_path / "data")
    problem(num_shards={"train": 3, "dev": 1, "test": 1}).generate_data(data, str(tmp_path / "tmp"))
    old_shards = [name for name in os.listdir(data) if "-train-" in name]
    assert len(old_shards) == 3
    problem(train_size=80).generate_data(data, str(tmp_path / "tmp"), overwrite=True)
    record = problem(train_size=80).completion_record(data)
    assert record["counts"]["train"] == 80 and record["options"]["train_size"] == 80
    assert not set(old_shards) & set(os.listdir(data))  # 10 train shards now, none of the 3 old
    names = {name for name in os.listdir(data) if not name.startswith(".")}
    listed = ({name for names in record["shards"].values() for name in names}
              | set(record["vocabularies"].values()))
    assert listed <= names
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []


def test_a_killed_overwrite_s_staging_is_removed_by_the_next_run(tmp_path):
    data = str(tmp_path / "data")
    problem().generate_data(data, str(tmp_path / "tmp"))
    orphan = tmp_path / ".data.k1ll3d.overwrite"
    orphan.mkdir()
    (orphan / "synthetic_syntax_reorder-train-00000-of-00010").write_bytes(b"half")
    problem(train_size=70).generate_data(data, str(tmp_path / "tmp"), overwrite=True)
    assert not orphan.exists()
    assert problem(train_size=70).completion_record(data)["counts"]["train"] == 70
