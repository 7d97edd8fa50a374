"""TensorBoard event files of scalars, written without TensorFlow.

On the TensorFlow backend `progress.py` writes its scalars with
`tf.summary`; a backend without TensorFlow (JAX) writes the same records
here, so that one TensorBoard reads the runs of both. An event file is a
TFRecord file (`data/tfrecord.py` frames and checksums the records) of
serialised `tensorflow.Event` messages: first one holding the file version,
then one per scalar. A scalar is stored as `tf.summary.write` stores it: a
float32 tensor with the scalar plugin's metadata, so readers that take the
value with `tf.make_ndarray(value.tensor)` (TensorBoard, the tests) read both
backends' files alike.

The few messages needed are encoded by hand from the field numbers of
TensorFlow's `core/util/event.proto`, `core/framework/summary.proto` and
`core/framework/tensor.proto`: protobuf's wire format is simple, and a
descriptor for three nested messages would be longer than their encoding.
"""

import os
import socket
import struct
import time
from typing import Optional

from syntax_t2t.data import tfrecord

#: What `tf.summary` names its files: this prefix, the creation time and the host.
FILE_PREFIX = "events.out.tfevents"
FILE_VERSION = b"brain.Event:2"
#: TensorFlow's DataType enum value of float32.
_DT_FLOAT = 1
_VARINT, _FIXED64, _LENGTH_DELIMITED = 0, 1, 2


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint((field << 3) | wire_type)


def _bytes_field(field: int, data: bytes) -> bytes:
    return _key(field, _LENGTH_DELIMITED) + _varint(len(data)) + data


def _event(wall_time: float, step: int, *, file_version: Optional[bytes] = None,
           summary: Optional[bytes] = None) -> bytes:
    """A serialised `Event` (wall_time = 1, step = 2, file_version = 3, summary = 5)."""
    data = _key(1, _FIXED64) + struct.pack("<d", wall_time)
    if step:
        # int64 as a varint; steps are never negative.
        data += _key(2, _VARINT) + _varint(int(step))
    if file_version is not None:
        data += _bytes_field(3, file_version)
    if summary is not None:
        data += _bytes_field(5, summary)
    return data


def scalar_summary(tag: str, value: float) -> bytes:
    """A serialised `Summary` holding one scalar as `tf.summary.write` stores it."""
    # SummaryMetadata.plugin_data (1) -> PluginData.plugin_name (1) = "scalars".
    metadata = _bytes_field(1, _bytes_field(1, b"scalars"))
    # TensorProto: dtype (1) = DT_FLOAT, tensor_shape (2) = scalar, float_val (5), packed.
    tensor = (_key(1, _VARINT) + _varint(_DT_FLOAT) + _bytes_field(2, b"")
              + _bytes_field(5, struct.pack("<f", float(value))))
    # Summary.Value: tag (1), tensor (8), metadata (9).
    summary_value = (_bytes_field(1, tag.encode("utf-8")) + _bytes_field(8, tensor)
                     + _bytes_field(9, metadata))
    return _bytes_field(1, summary_value)  # Summary.value (1)


class EventFileWriter:
    """Appends scalar events to a new event file in `directory` (created if needed).

    Args:
        directory: the folder TensorBoard reads as one run (`<output_dir>/train`).
    """

    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        now = time.time()
        self.path = os.path.join(directory,
                                 f"{FILE_PREFIX}.{int(now)}.{socket.gethostname()}.{os.getpid()}")
        self._writer = tfrecord.RecordWriter(self.path)
        self._writer.write(_event(now, 0, file_version=FILE_VERSION))

    def scalar(self, tag: str, value: float, step: int) -> None:
        """Writes one scalar at `step`."""
        self._writer.write(_event(time.time(), step, summary=scalar_summary(tag, value)))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
