"""Writing a problem's data: vocabulary pass, shard pass, records; workers and tasks.

`generate_data(problem, data_dir, tmp_dir, ...)` is `Problem.generate_data`.
It runs two passes over the problem's samples:

1. the vocabulary pass counts the training split (`Problem.vocabulary_counts`),
   writes the vocabularies and a vocabulary record `<name>.datagen-vocab.json`;
2. the shard pass encodes every split (`Problem.encode`) into TFRecord shards
   `<name>-<split>-NNNNN-of-MMMMM`, example `i` of a split going to shard
   `i % num_shards`, plus the plain-text copies of dev and test
   (`Problem.raw_paths`); then the completion record `<name>.datagen.json`.

Workers (`num_workers`). The samples are read in this process, in order, as
the problem's records (`Problem.generate_records`: cheap descriptions, e.g.
a random seed per sentence); forked workers turn chunks of records into
samples (`Problem.sample_of_record`), count or encode them and send back
counts or serialized examples, which this process merges or writes in input
order. So the shards do not depend on the number of workers: one and N
workers write the same bytes (`worker_pool.ordered_map`).

Tasks (`task`: `task_id` of `num_tasks`), T2T-style independent jobs, e.g.
one per machine or per cluster job. The vocabularies are built once first
(`only_vocab=True`, `bin/datagen --only_vocab`); then every task reads them
and writes the shards `j` with `j % num_tasks == task_id` (task 0 also
writes the plain-text copies), and a task record
`<name>.datagen-task-TTTTT-of-KKKKK.json`. Every task reads all records of a
split (to know each example's index) but turns only its own into samples.
The task that finds all task records present writes the completion record,
so the union of the tasks' outputs is exactly the data of one run.

Atomicity. Every file is written under a temporary name and renamed when
complete; the shards of a run (or task) are renamed only after every split
was written, and the completion record is written last. Only that record
makes the data count as complete: an interrupted run leaves either the old
complete data or no record at all, and the next run starts over.
"""

import collections
import contextlib
import dataclasses
import glob
import itertools
import json
import os
import shutil
import tempfile
import time
import uuid
from typing import Optional

import tensorflow as tf
from absl import logging

from syntax_t2t import directory_lock, io_utils
from syntax_t2t.data import pipeline
from syntax_t2t.datagen import token_statistics, worker_pool
from syntax_t2t.datagen.records import check_same_request, read_json, request
from syntax_t2t.data.conllu_reader import format_conllu
from syntax_t2t.errors import IgnoreSkipped, SkipCounter
from syntax_t2t.data.schema import (CONSTITUENCY_FEATURES, CONSTITUENCY_VOCABULARY, SPLITS, TRAIN,
                                DataNotGeneratedError, RawDataError, sentence_tokens)

#: Records per worker call: large enough to amortise the inter-process
#: traffic, small enough to keep every worker busy and memory flat.
CHUNK_SIZE = 64
_PROGRESS_EVERY_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class DatagenTask:
    """Which shards one of several independent datagen jobs writes.

    Args:
        task_id: this job, `0 <= task_id < num_tasks`.
        num_tasks: the number of jobs; 1 is an ordinary run.

    Raises:
        ValueError: `task_id` out of range.
    """

    task_id: int = 0
    num_tasks: int = 1

    def __post_init__(self):
        if self.num_tasks < 1 or not 0 <= self.task_id < self.num_tasks:
            raise ValueError(f"need 0 <= task_id < num_tasks, got task_id={self.task_id}, "
                             f"num_tasks={self.num_tasks}")

    @property
    def whole(self) -> bool:
        return self.num_tasks == 1

    def owns(self, shard_index: int) -> bool:
        return shard_index % self.num_tasks == self.task_id


#: Ends the name of the directory an `--overwrite` builds its data in, beside `--data_dir`.
_STAGING_SUFFIX = ".overwrite"


def vocabulary_record_path(problem, data_dir: str) -> str:
    return os.path.join(data_dir, f"{problem.name}.datagen-vocab.json")


def task_record_path(problem, data_dir: str, task: DatagenTask) -> str:
    return os.path.join(data_dir, f"{problem.name}.datagen-task-{task.task_id:05d}-of-"
                                  f"{task.num_tasks:05d}.json")


def generate_data(problem, data_dir: str, tmp_dir: str, max_examples: Optional[int] = None,
                  overwrite: bool = False, skip: Optional[SkipCounter] = None,
                  num_workers: int = 1, task: DatagenTask = DatagenTask(),
                  only_vocab: bool = False, shard_pass=None) -> dict:
    """`Problem.generate_data` (see there and the module docstring).

    Args:
        shard_pass: what writes the shards of a whole run (not of a task):
            called as `shard_pass(problem, data_dir, tmp_dir, max_examples,
            skip)` after the vocabulary pass, it returns the example counts
            and shard names per split. Default: this module's, in
            `num_workers` processes; `bin/datagen_beam` passes an Apache
            Beam pipeline (`syntax_t2t.datagen.beam_pipeline`).
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers}")
    if shard_pass is not None and not task.whole:
        raise ValueError("a shard_pass writes the shards of a whole run, not of a task")
    # A second run would delete this one's live temporaries and write over its data; the tasks
    # of one run share the directory.
    with directory_lock.locked(data_dir, "--data_dir", shared=not task.whole):
        return _generate_data(problem, data_dir, tmp_dir, max_examples, overwrite, skip,
                              num_workers, task, only_vocab, shard_pass)


def _generate_data(problem, data_dir, tmp_dir, max_examples, overwrite, skip, num_workers, task,
                   only_vocab, shard_pass, shown_dir=None) -> dict:
    os.makedirs(data_dir, exist_ok=True)
    if task.whole:
        # A killed run's temporaries; with tasks, another task's may be in use.
        io_utils.remove_orphaned_temporaries(data_dir, problem.name)
        _remove_orphaned_staging(data_dir)
    requested = {"options": _jsonable(problem.options()), "max_examples": max_examples}
    if only_vocab:
        return _vocabulary_pass(problem, data_dir, tmp_dir, requested, overwrite, skip, num_workers)
    record = None if overwrite else problem.completion_record(data_dir)
    if record is not None:
        return _kept(problem, data_dir, record, requested)
    if overwrite and task.whole and problem.completion_record(data_dir) is not None:
        return _overwrite_aside(problem, data_dir, tmp_dir, max_examples, skip, num_workers,
                                shard_pass)
    # Without a completion record, whatever is in data_dir is incomplete.
    with contextlib.suppress(FileNotFoundError):
        os.remove(problem.completion_record_path(data_dir))

    start = time.monotonic()
    if task.whole:
        vocabulary_record = _vocabulary_pass(problem, data_dir, tmp_dir, requested, True, skip,
                                             num_workers)
        statistics = None
        if shard_pass is None:
            statistics = token_statistics.TokenStatistics()
            counts, shards = _shard_pass(problem, data_dir, tmp_dir, max_examples, skip,
                                         num_workers, task, statistics)
        else:
            counts, shards = shard_pass(problem, data_dir, tmp_dir, max_examples, skip)
        record = _complete(problem, data_dir, vocabulary_record, counts, shards, skip)
        if statistics is not None:
            statistics.log(problem.name, vocabulary_record.get("vocab_sizes", {}))
        # Records of an earlier run's tasks would describe other shards.
        for path in glob.glob(os.path.join(glob.escape(data_dir),
                                           f"{glob.escape(problem.name)}.datagen-task-*.json")):
            os.remove(path)
    else:
        vocabulary_record = read_json(vocabulary_record_path(problem, data_dir))
        if vocabulary_record is None or request(vocabulary_record) != requested:
            raise DataNotGeneratedError(
                f"task {task.task_id} of {task.num_tasks}: no vocabularies of {problem.name} "
                f"generated with {requested} in {data_dir} "
                f"({vocabulary_record_path(problem, data_dir)} is missing or differs); build them "
                f"first with the same flags and --only_vocab")
        problem.load_vocabularies(data_dir)
        task_path = task_record_path(problem, data_dir, task)
        task_record = None if overwrite else read_json(task_path)
        if task_record is None or request(task_record) != requested:
            counts, shards = _shard_pass(problem, data_dir, tmp_dir, max_examples, skip,
                                         num_workers, task)
            task_record = dict(requested, counts=counts, shards=shards,
                               skipped=skip.counts if skip is not None else {})
            io_utils.atomic_write_text(task_path, json.dumps(task_record, indent=2) + "\n")
        record = _complete_tasks(problem, data_dir, vocabulary_record, task)
        if record is None:
            logging.info("%s: task %d of %d wrote its shards; the data is complete once every "
                         "task has", problem.name, task.task_id, task.num_tasks)
            return dict(task_record, complete=False, kept_existing=False, differs_from_request=False)
    logging.info("%s: wrote %s to %s in %.1f s", problem.name, _counts_text(record["counts"]),
                 shown_dir or data_dir, time.monotonic() - start)
    return dict(record, complete=True, kept_existing=False, differs_from_request=False)


def _staging_pattern(data_dir: str) -> str:
    parent, name = os.path.split(os.path.abspath(data_dir))
    return os.path.join(glob.escape(parent), f".{glob.escape(name)}.*{_STAGING_SUFFIX}")


def _remove_orphaned_staging(data_dir: str) -> None:
    # Under the data directory's lock no live run stages for it: these are a killed run's.
    for path in glob.glob(_staging_pattern(data_dir)):
        logging.warning("removing %s, left by an earlier --overwrite that did not finish", path)
        shutil.rmtree(path, ignore_errors=True)


def _overwrite_aside(problem, data_dir, tmp_dir, max_examples, skip, num_workers,
                     shard_pass) -> dict:
    """`--overwrite` of complete data: the new data is built beside it, then moved in whole.

    The old data stays complete and untouched until the new data is: a full
    disk, a bad raw file or a signal during the long work leaves the user
    the data they had. Moving in is renames only (no space needed); in its
    short window the data has no completion record, i.e. it reads as
    incomplete, never as a mix.
    """
    parent, name = os.path.split(os.path.abspath(data_dir))
    try:
        staging = tempfile.mkdtemp(dir=parent, prefix=f".{name}.", suffix=_STAGING_SUFFIX)
    except PermissionError:
        logging.warning("%s: cannot build the new data beside %s (its parent is not writable); "
                        "building it in place", problem.name, data_dir)
        with contextlib.suppress(FileNotFoundError):
            os.remove(problem.completion_record_path(data_dir))
        return _generate_data(problem, data_dir, tmp_dir, max_examples, False, skip, num_workers,
                              DatagenTask(), False, shard_pass)
    try:
        record = _generate_data(problem, staging, tmp_dir, max_examples, False, skip, num_workers,
                                DatagenTask(), False, shard_pass, shown_dir=data_dir)
        _move_in(problem, staging, data_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return record


def _move_in(problem, staging: str, data_dir: str) -> None:
    """Replaces the problem's files in `data_dir` by those in `staging`, the completion record last."""
    completion = os.path.basename(problem.completion_record_path(data_dir))
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(data_dir, completion))
    new = set(os.listdir(staging))
    for name in sorted(new - {completion}) + [completion]:
        os.replace(os.path.join(staging, name), os.path.join(data_dir, name))
    for name in os.listdir(data_dir):
        # The old data's files that the new data has not (other shard counts, a label vocabulary).
        if name not in new and name.startswith((f"{problem.name}-", f"{problem.name}.vocab.",
                                                f"{problem.name}.datagen")):
            os.remove(os.path.join(data_dir, name))


def _kept(problem, data_dir, record, requested) -> dict:
    check_same_request(problem.name, data_dir, request(record), requested)
    logging.info("%s: complete data already in %s (%s); kept it, pass --overwrite to "
                 "regenerate", problem.name, data_dir, _counts_text(record["counts"]))
    return dict(record, complete=True, kept_existing=True, differs_from_request=False)


# ----------------------------------------------------------------------
# Vocabulary pass.

def _vocabulary_pass(problem, data_dir, tmp_dir, requested, overwrite, skip, num_workers) -> dict:
    """Builds and saves the vocabularies and their record (kept when already there)."""
    path = vocabulary_record_path(problem, data_dir)
    record = None if overwrite else read_json(path)
    if record is not None and request(record) == requested and all(
            os.path.isfile(os.path.join(data_dir, name)) for name in record["vocabularies"].values()):
        logging.info("%s: vocabularies already in %s; kept them", problem.name, data_dir)
        return dict(record, kept_existing=True)
    problem.check_raw_files(tmp_dir)
    logging.info("%s: counting the training split for the vocabularies", problem.name)
    # The shard pass meets the same bad examples again and reports them;
    # this pass only has to skip them.
    quiet_skip = IgnoreSkipped() if skip is not None else None
    items, expand = split_items(problem, tmp_dir, TRAIN, requested["max_examples"], quiet_skip,
                           "counting")
    counts = {}
    with _worker_state(problem=problem, expand=expand):
        for part in worker_pool.ordered_map(_count_chunk, _chunks(items), num_workers):
            for name, counter in part.items():
                counts.setdefault(name, collections.Counter()).update(counter)
    vocabularies = problem.vocabularies_from_counts(counts)
    for name, vocab in vocabularies.items():
        vocab.save(problem.vocabulary_path(data_dir, name))
        logging.info("%s: vocabulary %s has %d entries", problem.name, name, len(vocab))
    if CONSTITUENCY_VOCABULARY not in vocabularies:
        # An earlier run's labels must not make decoding read trees.
        with contextlib.suppress(FileNotFoundError):
            os.remove(problem.vocabulary_path(data_dir, CONSTITUENCY_VOCABULARY))
    problem._vocabularies, problem._vocabulary_dir = vocabularies, os.path.abspath(data_dir)
    record = dict(requested, problem=problem.name,
                  feature_keys=list(problem.feature_keys) + (
                      list(CONSTITUENCY_FEATURES) if CONSTITUENCY_VOCABULARY in vocabularies else []),
                  vocabularies={name: os.path.basename(problem.vocabulary_path(data_dir, name))
                                for name in vocabularies},
                  vocab_sizes={name: len(vocab) for name, vocab in vocabularies.items()})
    io_utils.atomic_write_text(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return dict(record, kept_existing=False)


def _count_chunk(chunk):
    problem, expand = _WORKER["problem"], _WORKER["expand"]
    return problem.vocabulary_counts(map(expand, chunk))


# ----------------------------------------------------------------------
# Shard pass.

def _shard_pass(problem, data_dir, tmp_dir, max_examples, skip, num_workers, task,
                statistics=None):
    """Writes the shards `task` owns of every split; returns counts and all shard names.

    `statistics` (a `token_statistics.TokenStatistics`), when given, sums the
    tokens and `<UNK>`s of the examples written."""
    counts, shards, written = {}, {}, []
    try:
        for split in SPLITS:
            count = problem.num_shards[split]
            paths = {index: problem.shard_path(data_dir, split, index, count)
                     for index in range(count)}
            owned = {index: path for index, path in paths.items() if task.owns(index)}
            for path in owned.values():
                io_utils.remove_orphaned_temporaries(data_dir, os.path.basename(path))
            temporaries = {index: _temporary_name(path) for index, path in owned.items()}
            written.extend((temporaries[index], path) for index, path in owned.items())
            raw = problem.raw_paths(data_dir, split) if split != TRAIN and task.owns(0) else {}
            raw_temporaries = {kind: _temporary_name(path) for kind, path in raw.items()}
            written.extend((raw_temporaries[kind], path) for kind, path in raw.items())
            items, expand = split_items(problem, tmp_dir, split, max_examples, skip, "writing")
            counts[split] = _write_split(problem, split, items, expand, count, temporaries,
                                         raw_temporaries, num_workers, statistics)
            shards[split] = [os.path.basename(paths[index]) for index in range(count)]
        # Renaming only now keeps any earlier run's complete shards intact
        # until every split of this run has been written.
        for temporary, path in written:
            os.replace(temporary, path)
    except BaseException:
        for temporary, _ in written:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temporary)
        raise
    return counts, shards


def _write_split(problem, split, items, expand, num_shards, temporaries, raw_temporaries,
                 num_workers, statistics=None) -> int:
    """Encodes the items of the owned shards (`temporaries`: index -> path); returns the count."""
    total = [0]

    def jobs():
        for index, item in enumerate(items):
            total[0] = index + 1
            encode = index % num_shards in temporaries
            if encode or raw_temporaries:
                yield index, item, encode, bool(raw_temporaries)

    writers = {index: tf.io.TFRecordWriter(path) for index, path in temporaries.items()}
    raw_files = {kind: open(path, "w", encoding="utf-8") for kind, path in raw_temporaries.items()}
    bracketed = has_bracketed_trees(problem)
    try:
        with _worker_state(problem=problem, expand=expand, split=split, bracketed=bracketed):
            for results in worker_pool.ordered_map(_encode_chunk, _chunks(jobs()), num_workers):
                for index, serialized, raw_lines, token_counts in results:
                    if serialized is not None:
                        writers[index % num_shards].write(serialized)
                        if statistics is not None:
                            statistics.add(split, token_counts)
                    if raw_lines is not None:
                        raw_files["source"].write(raw_lines[0])
                        raw_files["reference"].write(raw_lines[1])
    finally:
        for writer in writers.values():
            writer.close()
        for raw_file in raw_files.values():
            raw_file.close()
    if total[0] == 0:
        logging.warning("%s: the %s split is empty", problem.name, split)
    return total[0]


def _encode_chunk(chunk):
    """`(index, serialized example or None, raw text lines or None, token counts or None)` of each job."""
    problem, expand = _WORKER["problem"], _WORKER["expand"]
    results = []
    for index, item, encode, raw in chunk:
        sample = expand(item)
        serialized = counts = None
        if encode:
            features = example_features(problem, sample, _WORKER["split"], index,
                                        _WORKER["bracketed"])
            serialized = pipeline.serialize_example(features)
            counts = token_statistics.example_counts(features)
        results.append((index, serialized, raw_copy_lines(problem, sample) if raw else None,
                        counts))
    return results


def encode_example(problem, sample, split: str, index: int, bracketed: bool) -> bytes:
    """The serialized example of sample `index` (0-based) of `split` (`example_features`, serialized).

    What every datagen writes (here and `syntax_t2t.datagen.beam_pipeline`).
    """
    return pipeline.serialize_example(example_features(problem, sample, split, index, bracketed))


def example_features(problem, sample, split: str, index: int, bracketed: bool) -> dict:
    """The encoded features of sample `index` (0-based) of `split`.

    Args:
        bracketed: the data has bracketed trees (a `const` vocabulary), so
            every sample must carry one.

    Raises:
        RawDataError: `bracketed`, and the sample has no bracketed tree.
    """
    features = problem.encode(sample)
    if bracketed and CONSTITUENCY_FEATURES[0] not in features:
        raise RawDataError(
            f"{problem.name}: sentence {index + 1} of the {split} split has no bracketed tree, "
            f"but the training sentences have; every split needs them")
    return features


def has_bracketed_trees(problem) -> bool:
    """Whether the loaded vocabularies make every sample need a bracketed tree."""
    return CONSTITUENCY_VOCABULARY in problem._loaded_vocabularies()


def raw_copy_lines(problem, sample) -> tuple[str, str]:
    """A sample's lines in the plain-text copies of dev and test (`Problem.raw_paths`):
    source (a CoNLL-U sentence, or tokens) and reference."""
    source, target = sample
    return (format_conllu([source]) if problem.has_source_trees
            else " ".join(sentence_tokens(source)) + "\n",
            " ".join(sentence_tokens(target)) + "\n")


# ----------------------------------------------------------------------
# Records.

def _complete(problem, data_dir, vocabulary_record, counts, shards, skipped) -> dict:
    """Writes the completion record, last, and removes shards of other shard counts."""
    record = {key: value for key, value in vocabulary_record.items() if key != "kept_existing"}
    record.update(counts=counts, shards=shards,
                  skipped=skipped.counts if isinstance(skipped, SkipCounter) else skipped or {})
    _remove_stale_shards(problem, data_dir, {name for names in shards.values() for name in names})
    io_utils.atomic_write_text(problem.completion_record_path(data_dir),
                               json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def _complete_tasks(problem, data_dir, vocabulary_record, task) -> Optional[dict]:
    """The completion record once every task of `task.num_tasks` has written its record, else None."""
    records = [read_json(task_record_path(problem, data_dir, DatagenTask(index, task.num_tasks)))
               for index in range(task.num_tasks)]
    requested = request(vocabulary_record)
    if any(record is None or request(record) != requested for record in records):
        return None
    first = records[0]
    return _complete(problem, data_dir, vocabulary_record, first["counts"], first["shards"],
                     first["skipped"])


def _remove_stale_shards(problem, data_dir, current):
    """Removes shards of an earlier run with other shard counts."""
    prefix = f"{problem.name}-"
    for name in os.listdir(data_dir):
        if (name.startswith(prefix) and "-of-" in name and name not in current
                and any(name.startswith(f"{prefix}{split}-") for split in SPLITS)):
            os.remove(os.path.join(data_dir, name))


# ----------------------------------------------------------------------
# Items and workers.

def split_items(problem, tmp_dir, split, max_examples, skip, stage):
    """The split's items (at most `max_examples`) and how a worker turns one into a sample.

    Records (`Problem.generate_records`) unless the split has a file of
    bracketed trees, whose trees are joined to the samples in order here.
    """
    trees_path = problem.source_trees_path(tmp_dir, split)
    if trees_path is None:
        items = problem.generate_records(tmp_dir, split, skip)
    else:
        items = problem._with_source_trees(problem.generate_samples(tmp_dir, split, skip),
                                           trees_path, skip)
    expand = sample_maker(problem, tmp_dir, split)
    if max_examples is not None:
        items = itertools.islice(items, max_examples)
    return _with_progress(items, f"{problem.name} {split} ({stage})"), expand


def sample_maker(problem, tmp_dir, split):
    """How a worker turns one of `split_items`' items into a sample."""
    return problem.sample_of_record if problem.source_trees_path(tmp_dir, split) is None else _identity


def _identity(item):
    return item


def _chunks(items):
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, CHUNK_SIZE)):
        yield chunk


#: What forked workers read (inherited at fork; see `worker_pool`).
_WORKER = {}


@contextlib.contextmanager
def _worker_state(**state):
    _WORKER.clear()
    _WORKER.update(state)
    try:
        yield
    finally:
        _WORKER.clear()


def _with_progress(items, label):
    """Passes `items` through, logging how many went by and how fast."""
    count, start = 0, time.monotonic()
    last_report = start
    for item in items:
        yield item
        count += 1
        now = time.monotonic()
        if now - last_report >= _PROGRESS_EVERY_SECONDS:
            logging.info("%s: %d examples (%.0f examples/s)", label, count, count / (now - start))
            last_report = now
    elapsed = max(time.monotonic() - start, 1e-9)
    logging.info("%s: %d examples (%.0f examples/s)", label, count, count / elapsed)


def _temporary_name(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")


def _counts_text(counts: dict) -> str:
    return ", ".join(f"{count} {split}" for split, count in counts.items())


def _jsonable(value):
    """Options as JSON would read them back (tuples become lists)."""
    return json.loads(json.dumps(value))
