"""Tests for syntax_t2t.data.tfrecord (framing, checksums, tf.train.Example), no TensorFlow.

The comparisons with TensorFlow's own writer and parser are in
`test_numpy_pipeline_tf.py`.
"""

import pickle
import struct

import numpy as np
import pytest

from syntax_t2t.data import tfrecord
from syntax_t2t.errors import InputError

pytestmark = pytest.mark.backends

RECORDS = [b"", b"x", bytes(range(256)) * 3, b"\x00" * 100_000, b"last"]


@pytest.fixture
def shard(tmp_path):
    path = tmp_path / "shard"
    assert tfrecord.write_records(path, RECORDS) == len(RECORDS)
    return path


def _offsets(records):
    offsets, offset = [], 0
    for data in records:
        offsets.append(offset)
        offset += tfrecord.HEADER_BYTES + len(data) + tfrecord.FOOTER_BYTES
    return offsets


def test_crc32c_and_its_mask():
    # The CRC-32C check value (RFC 3720, B.4) and the mask written out by hand.
    crc = 0xE3069283
    rotated = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
    assert tfrecord.masked_crc32c(b"123456789") == (rotated + 0xA282EAD8) % 2**32


def test_framing_of_one_record(tmp_path):
    path = tmp_path / "one"
    tfrecord.write_records(path, [b"abc"])
    length = struct.pack("<Q", 3)
    assert path.read_bytes() == (length + struct.pack("<I", tfrecord.masked_crc32c(length)) + b"abc"
                                 + struct.pack("<I", tfrecord.masked_crc32c(b"abc")))


def test_records_read_back_with_their_offsets(shard):
    assert list(tfrecord.read_records(shard)) == RECORDS
    with tfrecord.RecordReader(shard) as reader:
        assert list(reader.records()) == list(zip(_offsets(RECORDS), RECORDS))
        # Random access, and reading on from a record's offset.
        for offset, data in reversed(list(zip(_offsets(RECORDS), RECORDS))):
            assert reader.read_at(offset) == data
        third = _offsets(RECORDS)[2]
        assert [data for _, data in reader.records(third)] == RECORDS[2:]


def test_an_empty_file_holds_no_record(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert list(tfrecord.read_records(tmp_path / "empty")) == []


def _damaged(shard, edit):
    data = bytearray(shard.read_bytes())
    edit(data)
    shard.write_bytes(bytes(data))
    return shard


def _flip(position):
    def edit(data):
        data[position] ^= 0x10
    return edit


def _truncate(size):
    def edit(data):
        del data[size:]
    return edit


third, fourth = _offsets(RECORDS)[2], _offsets(RECORDS)[3]
DAMAGES = {
    # what is damaged: (edit, offset of the record named, what the error says)
    "a data byte": (_flip(third + tfrecord.HEADER_BYTES + 100), third, "data CRC mismatch"),
    "the data's checksum": (_flip(fourth - 2), third, "data CRC mismatch"),
    "a length byte": (_flip(third), third, "length CRC mismatch"),
    "the length's checksum": (_flip(third + 9), third, "length CRC mismatch"),
    "the data (truncated)": (_truncate(third + 20), third, "truncated record"),
    "the header (truncated)": (_truncate(third + 5), third, "truncated record"),
    "the last checksum (truncated)": (_truncate(-1), _offsets(RECORDS)[-1], "truncated record"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_record_is_named_by_file_offset_and_kind(shard, damage):
    edit, offset, problem = DAMAGES[damage]
    _damaged(shard, edit)
    read = []
    with pytest.raises(tfrecord.DamagedRecordError) as raised:
        for data in tfrecord.read_records(shard):
            read.append(data)
    error = raised.value
    assert (error.path, error.offset) == (str(shard), offset)
    assert problem in error.problem
    assert str(error).startswith(f"{shard}: damaged TFRecord at byte offset {offset}: {problem}")
    assert isinstance(error, InputError) and error.reason == "damaged shard"
    # The records before the damaged one were read.
    assert read == RECORDS[:_offsets(RECORDS).index(offset)]
    with tfrecord.RecordReader(shard) as reader, pytest.raises(tfrecord.DamagedRecordError):
        reader.read_at(offset)


def test_the_error_survives_pickling():
    error = tfrecord.DamagedRecordError("/data/x-train-00001-of-00002", 11484, "data CRC mismatch")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.offset, copy.problem, str(copy)) == (
        error.path, error.offset, error.problem, str(error))


def test_serialisation_is_independent_of_key_order():
    features = {"inputs": [5, 300, 1], "targets": [70_000, 1], "src_heads": [0, 1]}
    reordered = dict(reversed(list(features.items())))
    data = tfrecord.serialize_int64_features(features)
    assert tfrecord.serialize_int64_features(reordered) == data
    parsed = tfrecord.parse_example(data)
    assert {key: value.tolist() for key, value in parsed.items()} == features
    assert all(value.dtype == np.int64 for value in parsed.values())


def test_parsing_every_kind_of_feature():
    example = tfrecord.Example()
    feature = example.features.feature
    feature["ids"].int64_list.value.extend([-1, 2**40])
    feature["scores"].float_list.value.extend([0.5, -2.0])
    feature["words"].bytes_list.value.extend([b"dva", "tři".encode()])
    feature["nothing"].SetInParent()
    parsed = tfrecord.parse_example(example.SerializeToString(deterministic=True))
    assert parsed["ids"].tolist() == [-1, 2**40] and parsed["ids"].dtype == np.int64
    assert parsed["scores"].tolist() == [0.5, -2.0] and parsed["scores"].dtype == np.float32
    assert parsed["words"] == [b"dva", "tři".encode()]
    assert parsed["nothing"].tolist() == []

    ints = tfrecord.parse_int_features(example.SerializeToString(), ["ids", "nothing", "absent"])
    assert [value.dtype for value in ints.values()] == [np.int32] * 3
    assert ints["ids"].tolist()[0] == -1
    assert ints["nothing"].tolist() == ints["absent"].tolist() == []
    with pytest.raises(ValueError, match="feature 'scores' holds a float_list, not an int64_list"):
        tfrecord.parse_int_features(example.SerializeToString(), ["scores"])
