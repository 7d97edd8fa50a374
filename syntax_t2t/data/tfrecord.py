"""TFRecord shards of `tf.train.Example`s, read and written without TensorFlow.

Datagen writes its shards with TensorFlow; a backend without TensorFlow
(JAX) reads them here. A TFRecord file is a sequence of records, each framed
as TensorFlow's `io/record_writer.cc` frames it:

    uint64 length, little-endian
    uint32 masked CRC32C of those 8 bytes
    length bytes of data
    uint32 masked CRC32C of the data

where `masked(crc) = rotate_right(crc, 15) + 0xa282ead8 (mod 2**32)`. Both
checksums are verified on every read, so a damaged shard fails at its first
damaged record (`DamagedRecordError`, naming the file, the byte offset and
whether the file is truncated or which checksum does not match) instead of
feeding wrong examples to training. The CRC32C is `google-crc32c`'s (C).

The data of each record is a serialised `tf.train.Example`. Its message
classes are built here at import time from a descriptor with the field
numbers of TensorFlow's `core/example/{example,feature}.proto`, in a private
descriptor pool (so they never clash with TensorFlow's own classes when both
are loaded); protobuf's C parser does the parsing. Serialisation is
deterministic (the feature map in key order), so the same examples are the
same bytes in every process.

The project writes no compressed shards (datagen and `bin/datagen_beam`
write plain TFRecords), so no compression is read here.
"""

import os
import struct
from typing import BinaryIO, Iterable, Iterator, Mapping, Optional, Sequence, Union

import google_crc32c
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from syntax_t2t.errors import InputError

PathLike = Union[str, os.PathLike]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
HEADER_BYTES = _LENGTH.size + _CRC.size
FOOTER_BYTES = _CRC.size
_MASK_DELTA = 0xA282EAD8
_READ_BUFFER_BYTES = 1 << 20


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC32C of `data`.

    The mask keeps a CRC of data that itself holds CRCs from being trivially
    related to them (as LevelDB's log format, where it comes from).
    """
    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


class DamagedRecordError(InputError):
    """A TFRecord file that cannot be read to its end.

    Attributes:
        path: the file.
        offset: the byte offset of the record that is damaged.
        problem: what is wrong (truncated, length CRC or data CRC mismatch).
    """

    def __init__(self, path: PathLike, offset: int, problem: str):
        self.offset = offset
        self.problem = problem
        super().__init__(path, None, f"damaged TFRecord at byte offset {offset}: {problem}",
                         reason="damaged shard")

    def __reduce__(self):
        return (type(self), (self.path, self.offset, self.problem))


class RecordReader:
    """The records of one TFRecord file, read in order or at known offsets.

    Args:
        path: the file.

    Use as a context manager, or `close()` it.
    """

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        self._file: BinaryIO = open(self.path, "rb", buffering=_READ_BUFFER_BYTES)

    def __enter__(self) -> "RecordReader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def records(self, offset: int = 0) -> Iterator[tuple[int, bytes]]:
        """`(offset, data)` of every record from byte `offset` (a record's start) to the end.

        Raises:
            DamagedRecordError: at the first damaged record.
        """
        self._file.seek(offset)
        while True:
            data = self._read_record(offset)
            if data is None:
                return
            yield offset, data
            offset += HEADER_BYTES + len(data) + FOOTER_BYTES

    def read_at(self, offset: int) -> bytes:
        """The record that starts at byte `offset`.

        Raises:
            DamagedRecordError: that record is damaged, or the file ends there.
        """
        self._file.seek(offset)
        data = self._read_record(offset)
        if data is None:
            raise DamagedRecordError(self.path, offset, "truncated file: no record starts here")
        return data

    def _read_record(self, offset: int) -> Optional[bytes]:
        """The record at the file position (`offset`), or None at a clean end of file."""
        header = self._file.read(HEADER_BYTES)
        if not header:
            return None
        if len(header) < HEADER_BYTES:
            raise DamagedRecordError(self.path, offset,
                                     f"truncated record: the file ends {len(header)} bytes into "
                                     f"its {HEADER_BYTES}-byte header")
        length_bytes = header[:_LENGTH.size]
        (stored,) = _CRC.unpack_from(header, _LENGTH.size)
        if masked_crc32c(length_bytes) != stored:
            # The length cannot be trusted, so nothing after it can be read.
            raise DamagedRecordError(self.path, offset, "length CRC mismatch (the length field "
                                     "or its checksum is damaged)")
        (length,) = _LENGTH.unpack(length_bytes)
        body = self._file.read(length + FOOTER_BYTES)
        if len(body) < length + FOOTER_BYTES:
            raise DamagedRecordError(self.path, offset,
                                     f"truncated record: {length} data bytes and a "
                                     f"{FOOTER_BYTES}-byte checksum expected, {len(body)} left")
        data = body[:length]
        (stored,) = _CRC.unpack_from(body, length)
        if masked_crc32c(data) != stored:
            raise DamagedRecordError(self.path, offset, "data CRC mismatch (the record's data or "
                                     "its checksum is damaged)")
        return data


def read_records(path: PathLike) -> Iterator[bytes]:
    """Every record of a TFRecord file, checked; see `RecordReader.records`."""
    with RecordReader(path) as reader:
        for _, data in reader.records():
            yield data


class RecordWriter:
    """Writes records to a new TFRecord file, framed as TensorFlow's `TFRecordWriter` does.

    Args:
        path: the file, created or replaced.
    """

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)
        self._file: BinaryIO = open(self.path, "wb")

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def write(self, data: bytes) -> None:
        """Appends one record."""
        length = _LENGTH.pack(len(data))
        self._file.write(length + _CRC.pack(masked_crc32c(length)))
        self._file.write(data)
        self._file.write(_CRC.pack(masked_crc32c(data)))

    def flush(self) -> None:
        """Hands the records written so far to the operating system (readers see them)."""
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def write_records(path: PathLike, records: Iterable[bytes]) -> int:
    """Writes `records` to a new TFRecord file; returns how many."""
    count = 0
    with RecordWriter(path) as writer:
        for data in records:
            writer.write(data)
            count += 1
    return count


# ----------------------------------------------------------------------
# tf.train.Example without TensorFlow.

def _example_file() -> descriptor_pb2.FileDescriptorProto:
    """The messages of TensorFlow's example.proto and feature.proto (those an Example holds)."""
    types = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="syntax_t2t/data/tf_example.proto",
                                              package="tensorflow", syntax="proto3")

    def message(name, *fields, parent=None):
        proto = (parent.nested_type if parent else file.message_type).add(name=name)
        for field_name, number, kind, label, type_name in fields:
            field = proto.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = type_name
        return proto

    repeated, optional = types.LABEL_REPEATED, types.LABEL_OPTIONAL
    message("BytesList", ("value", 1, types.TYPE_BYTES, repeated, None))
    for name, kind in (("FloatList", types.TYPE_FLOAT), ("Int64List", types.TYPE_INT64)):
        message(name, ("value", 1, kind, repeated, None)).field[0].options.packed = True
    feature = message("Feature",
                      ("bytes_list", 1, types.TYPE_MESSAGE, optional, ".tensorflow.BytesList"),
                      ("float_list", 2, types.TYPE_MESSAGE, optional, ".tensorflow.FloatList"),
                      ("int64_list", 3, types.TYPE_MESSAGE, optional, ".tensorflow.Int64List"))
    feature.oneof_decl.add(name="kind")
    for field in feature.field:
        field.oneof_index = 0
    features = message("Features", ("feature", 1, types.TYPE_MESSAGE, repeated,
                                    ".tensorflow.Features.FeatureEntry"))
    entry = message("FeatureEntry", ("key", 1, types.TYPE_STRING, optional, None),
                    ("value", 2, types.TYPE_MESSAGE, optional, ".tensorflow.Feature"),
                    parent=features)
    entry.options.map_entry = True
    message("Example", ("features", 1, types.TYPE_MESSAGE, optional, ".tensorflow.Features"))
    return file


def _message_classes() -> dict:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_example_file())
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"tensorflow.{name}"))
            for name in ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List")}


_CLASSES = _message_classes()
Example = _CLASSES["Example"]
Features = _CLASSES["Features"]
Feature = _CLASSES["Feature"]
BytesList = _CLASSES["BytesList"]
FloatList = _CLASSES["FloatList"]
Int64List = _CLASSES["Int64List"]


def serialize_int64_features(features: Mapping[str, Sequence[int]]) -> bytes:
    """A `tf.train.Example` holding each value as an int64 list, the same bytes in any process.

    Byte for byte `data.pipeline.serialize_example`'s, without TensorFlow.
    """
    example = Example()
    for key, values in features.items():
        example.features.feature[key].int64_list.value.extend(int(value) for value in values)
    return example.SerializeToString(deterministic=True)


def parse_example(data: bytes) -> dict[str, Union[np.ndarray, list[bytes]]]:
    """Every feature of a serialised `tf.train.Example`.

    Returns:
        key -> int64 array (`int64_list`), float32 array (`float_list`),
        list of bytes (`bytes_list`), or an empty int64 array (a feature
        with no list).

    Raises:
        google.protobuf.message.DecodeError: `data` is not an Example.
    """
    parsed = {}
    for key, feature in Example.FromString(data).features.feature.items():
        kind = feature.WhichOneof("kind")
        if kind == "bytes_list":
            parsed[key] = list(feature.bytes_list.value)
        elif kind == "float_list":
            parsed[key] = np.array(feature.float_list.value, np.float32)
        else:
            parsed[key] = np.array(feature.int64_list.value if kind else (), np.int64)
    return parsed


def parse_int_lists(data: bytes, keys: Sequence[str]) -> dict[str, list[int]]:
    """The int64-list features `keys` of a serialised Example, as Python lists.

    A key the example lacks is an empty list, as `data.pipeline.parse_example`
    gives with TensorFlow. Lists, not arrays: a pipeline copies them into its
    padded batch arrays anyway, and a small NumPy array per feature and
    example would cost more than the parse.

    Raises:
        ValueError: a feature holds floats or bytes.
        google.protobuf.message.DecodeError: `data` is not an Example.
    """
    feature_map = Example.FromString(data).features.feature
    parsed = {}
    for key in keys:
        # Looked up only when present: indexing a message map inserts the key.
        feature = feature_map[key] if key in feature_map else None
        if feature is None:
            parsed[key] = []
            continue
        kind = feature.WhichOneof("kind")
        if kind not in (None, "int64_list"):
            raise ValueError(f"feature {key!r} holds a {kind}, not an int64_list")
        parsed[key] = list(feature.int64_list.value)
    return parsed


def parse_int_features(data: bytes, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """`parse_int_lists` as int32 vectors: `data.pipeline.parse_example` without TensorFlow."""
    return {key: np.array(values, np.int64).astype(np.int32)
            for key, values in parse_int_lists(data, keys).items()}
