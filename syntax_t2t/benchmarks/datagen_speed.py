"""Data preparation speed and memory: `bin/bench --datagen` (docs/performance.md).

Three measurements, each in fresh child processes so that one does not
warm or bloat the next:

* `synthetic_throughput`: datagen (`Problem.generate_data`, what
  `bin/datagen` runs) on `synthetic_syntax_reorder` with 1 and 2 workers;
  examples/s counts every example written (train, dev, test) over the
  wall time of `generate_data`, both passes included;
* `spacy_parse_rate`: sentences/s of a spaCy tagger and parser (initialised,
  untrained: the same network size as a trained one of that config) with
  `nlp.pipe(n_process=1)` and `n_process=2`;
* `peak_memory`: the peak resident set of a datagen process (one worker) on two
  training-set sizes, read from the child's own resource usage (`wait4`).
"""

import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBLEM = "synthetic_syntax_reorder"


def run_datagen(data_dir: str, train_size: int, num_workers: int = 1,
                other_size: int = 500) -> tuple[float, int]:
    """Runs datagen in a child process; returns (seconds, peak RSS in bytes).

    The seconds are those of `generate_data` alone, without the child's
    start (importing TensorFlow takes seconds).
    """
    options = (f"{{'train_size': {train_size}, 'dev_size': {other_size}, "
               f"'test_size': {other_size}}}")
    # The sizes are problem options that bin/datagen has no flag for.
    script = (f"import sys; sys.path.insert(0, {REPO!r})\n"
              "from syntax_t2t import registry\n"
              "from syntax_t2t.cli import registration\n"
              "registration.import_all()\n"
              f"problem = registry.problems.get({PROBLEM!r})(**{options})\n"
              "import time\n"
              "start = time.perf_counter()\n"
              f"problem.generate_data({data_dir!r}, {data_dir!r}, overwrite=True, "
              f"num_workers={num_workers})\n"
              "print(time.perf_counter() - start)\n")
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                   stderr=errors)
        stdout = process.stdout.read().decode("utf-8", "replace")  # one line
        process.stdout.close()
        # wait4, unlike Popen.wait, gives this child's own peak memory.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise RuntimeError(f"datagen failed ({process.returncode}): "
                               f"{errors.read().decode('utf-8', 'replace')[-2000:]}")
    seconds = float(stdout.split()[-1])
    return seconds, usage.ru_maxrss * 1024  # Linux reports kilobytes


def synthetic_throughput(train_size: int, workers=(1, 2)) -> list[dict]:
    """examples/s (and per worker process) of datagen with each number of workers."""
    rows = []
    for num_workers in workers:
        with tempfile.TemporaryDirectory(prefix="bench_datagen.") as directory:
            seconds, _ = run_datagen(directory, train_size, num_workers)
        examples = train_size + 2 * 500
        rows.append({"workers": num_workers, "examples": examples, "seconds": seconds,
                     "examples_per_second": examples / seconds,
                     "examples_per_second_per_process": examples / seconds / num_workers})
    base = rows[0]["examples_per_second"]
    for row in rows:
        row["speed_up"] = row["examples_per_second"] / base
    return rows


def peak_memory(train_sizes=(100_000, 1_000_000)) -> list[dict]:
    """Peak RSS of one-worker datagen per training-set size, and its ratio to the first."""
    rows = []
    for train_size in train_sizes:
        with tempfile.TemporaryDirectory(prefix="bench_datagen.") as directory:
            seconds, rss = run_datagen(directory, train_size)
        rows.append({"train_size": train_size, "peak_rss_bytes": rss, "seconds": seconds})
    for row in rows:
        row["ratio_to_smallest"] = row["peak_rss_bytes"] / rows[0]["peak_rss_bytes"]
    return rows


def spacy_parse_rate(sentences: int, processes=(1, 2), lang: str = "en") -> list[dict]:
    """Sentences/s of `SpacyParser.parse_texts` with each number of processes."""
    import spacy

    from syntax_t2t.parsing.spacy_adapter import SpacyParser

    nlp = spacy.blank(lang)
    nlp.add_pipe("tagger").add_label("X")
    nlp.add_pipe("parser").add_label("dep")
    nlp.initialize()
    words = "the quick brown fox jumps over the lazy dog near a river bank".split()
    texts = [" ".join(words[index % 5:] + words[:index % 7 + 3]) for index in range(sentences)]
    rows = []
    for n_process in processes:
        parser = SpacyParser(nlp, f"spacy:blank_{lang}", n_process=n_process)
        start = time.perf_counter()
        count = sum(1 for _ in parser.parse_texts(texts))
        seconds = time.perf_counter() - start
        rows.append({"processes": n_process, "sentences": count, "seconds": seconds,
                     "sentences_per_second": count / seconds})
    for row in rows:
        row["speed_up"] = row["sentences_per_second"] / rows[0]["sentences_per_second"]
    return rows


def report(results: dict) -> str:
    """The measurements present in `results` (`throughput`, `parsing`, `memory`) as text tables."""
    lines = []
    if "throughput" in results:
        lines.append("datagen (synthetic_syntax_reorder): workers, examples, seconds, examples/s, "
                     "per process, speed-up")
        lines += [f"  {row['workers']}  {row['examples']}  {row['seconds']:.1f}  "
                  f"{row['examples_per_second']:.0f}  "
                  f"{row['examples_per_second_per_process']:.0f}  {row['speed_up']:.2f}x"
                  for row in results["throughput"]]
    if "parsing" in results:
        lines.append("spaCy parsing: processes, sentences, seconds, sentences/s, speed-up")
        lines += [f"  {row['processes']}  {row['sentences']}  {row['seconds']:.1f}  "
                  f"{row['sentences_per_second']:.0f}  {row['speed_up']:.2f}x"
                  for row in results["parsing"]]
    if "memory" in results:
        lines.append("datagen peak memory (1 worker): train sentences, peak RSS MiB, ratio, "
                     "seconds")
        lines += [f"  {row['train_size']}  {row['peak_rss_bytes'] / 2**20:.0f}  "
                  f"{row['ratio_to_smallest']:.2f}  {row['seconds']:.0f}"
                  for row in results["memory"]]
    return "\n".join(lines)
