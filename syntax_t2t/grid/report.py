"""The report of a grid: `results.md`, `results.json` and the plots, from the finished runs.

Rows are written for every system with at least one scored run, so a grid
that spans several sessions reports what has arrived (the seed counts say
how much). Per test set and system: cased sacreBLEU and chrF as mean ± sample
standard deviation over seeds (the value alone for one seed, which has no
sd) and each seed's value; then each of the
experiment's comparisons (`Experiment.comparisons`) with two-sided tests
only: Student's t on the seed means with the seed sd pooled over the
table's systems, Holm-adjusted over the comparisons, the difference these
seeds can detect, the two-level bootstrap where both systems have two
seeds or more, and the paired bootstrap of each seed both have
(`evaluation/seed_significance.py`, `SIGNIFICANCE_NOTE`); where the
experiment lists length penalties, the same at the alpha each run's dev
translations chose (`grid/length_penalty.py`), with each seed's alpha; a
sealed test's table once its seal is opened (`grid/seal.py`); the parse
heads' UAS/LAS on gold trees beside the teacher parser's and the
previous-word and next-word chains', overall and
by gold sentence length (`ParseTest.length_edges`); steps, training
wall time and target tokens/s of each run; and where each unfinished run
stands (not started, training with its newest evaluation and best so far, or
testing, with the stages left).
"""

import dataclasses
import os
import statistics

from syntax_t2t import io_utils
from syntax_t2t.data.parse_file import read_parsed
from syntax_t2t.errors import counted
from syntax_t2t.evaluation import (attachment, multiple_testing, seed_significance, student_t,
                                   translation)
from syntax_t2t.evaluation.training_plots import plot_learning_curves, plot_system_scores
from syntax_t2t.grid import archive, backend_record, length_penalty, runner, seal
from syntax_t2t.training import validation


def _mean_sd(values):
    """(mean, sample sd); one value has no sd (None), not an sd of 0."""
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _format(mean, sd, digits=2):
    if mean is None:
        return ""
    return f"{mean:.{digits}f}" + ("" if sd is None else f" ± {sd:.{digits}f}")


def _detectable(value):
    return "" if value is None else f"{value:.2f}"


def _hours(seconds):
    minutes = int(round(seconds / 60))
    return f"{minutes // 60}h{minutes % 60:02d}"


def collect(grid_runner, runs):
    """`{system name: [scores of each scored run, by seed]}` in the experiment's order."""
    collected = {}
    for run in runs:
        scores = runner.read_json(os.path.join(run.directory, runner.SCORES_FILE))
        if scores is not None:
            collected.setdefault(run.system.name, []).append((run, scores))
    return collected


def run_progress(grid_runner, run):
    """Where an unfinished run stands, from its files (nothing is started or claimed).

    Returns:
        `{"run", "stage"}` with `stage` one of "not started", "training"
        or "testing"; then `"stages_left"` (the keys not done yet), and,
        once it has been evaluated, `"step"` (the newest evaluated step)
        and `"best"` (the best checkpoint's step, metric and value).
    """
    state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE), {})
    history = validation.read_history(run.directory)  # empty when there is no file
    evaluations = history["evaluations"]
    done = state.get("done", {})
    # A task claims all its runs before the first trains: a claim is not a start.
    started = bool(done) or os.path.exists(os.path.join(run.directory, "train.log"))
    if not (started or evaluations):
        return {"run": run.name, "stage": "not started"}
    left = [key for key, _ in grid_runner.stages(run, state)
            if not runner.is_done(run, state, key)]
    result = {"run": run.name, "stage": "training" if "train" in left else "testing",
              "stages_left": left}
    if evaluations:
        result["step"] = evaluations[-1]["step"]
        result["best"] = history.get("best")
    return result


def _entries(collected, key, test):
    """`{system: [(run, {"BLEU", "chrF"})]}` of the runs scored on `test` under `scores[key]`.

    Runs without `scores[key][test]` (scored before the experiment had that
    stage) are left out.
    """
    entries_of = {name: [(run, scores[key][test.name]) for run, scores in entries
                         if test.name in scores.get(key, {})]
                  for name, entries in collected.items()}
    return {name: entries for name, entries in entries_of.items() if entries}


def _score_rows(entries_of):
    """Per system: its seeds and BLEU and chrF per seed, with mean ± sd."""
    rows = {}
    for name, entries in entries_of.items():
        bleu = [scores["BLEU"] for _, scores in entries]
        chrf = [scores["chrF"] for _, scores in entries]
        rows[name] = {"seeds": [run.seed for run, _ in entries], "BLEU": bleu, "chrF": chrf,
                      "BLEU_mean_sd": _mean_sd(bleu), "chrF_mean_sd": _mean_sd(chrf)}
    return rows


def _contrasts(grid_runner, entries_of, rows, test, output, samples):
    """The experiment's comparisons on one table of scores (see `markdown`'s note).

    `output(run)` is the file of the run's translations that were scored.
    """
    references = translation.read_segments(grid_runner.path(test.reference))
    seed_scores = [row["BLEU"] for row in rows.values()]
    pooled = seed_significance.pooled_seed_sd(seed_scores)
    hypotheses = {name: {run.seed: translation.read_segments(output(run)) for run, _ in entries}
                  for name, entries in entries_of.items()}
    comparisons = []
    for name, against in grid_runner.experiment.comparisons():
        if name not in rows or against not in rows:
            continue
        mine, theirs = rows[name]["BLEU"], rows[against]["BLEU"]
        entry = {"system": name, "against": against, "seeds": [len(theirs), len(mine)],
                 "delta": statistics.fmean(mine) - statistics.fmean(theirs),
                 "t_test": None, "bootstrap": None, "per_seed_p": {}, "detectable": None}
        tested = seed_significance.seed_t_test(theirs, mine, pooled)
        if tested is not None:
            half = student_t.quantile(0.975, tested.df) * tested.standard_error
            entry["t_test"] = {"p_value": tested.p_value, "t": tested.t, "df": tested.df,
                               "ci": [tested.delta - half, tested.delta + half]}
            entry["detectable"] = seed_significance.detectable_difference_from_sd(
                pooled.sd, pooled.df, len(theirs), len(mine))
        base, other = hypotheses[against], hypotheses[name]
        if min(len(mine), len(theirs)) >= 2:
            # With one seed the bootstrap sees no seed variance: no p-value from it.
            result = seed_significance.compare_translations(
                list(base.values()), list(other.values()), references, samples=samples)
            entry["bootstrap"] = {"p_value": result.p_value, "ci": [result.ci_low, result.ci_high]}
        for seed in sorted(set(base) & set(other)):
            entry["per_seed_p"][str(seed)] = seed_significance.compare_translations(
                [base[seed]], [other[seed]], references, samples=samples).p_value
        comparisons.append(entry)
    for entry, adjusted in zip(comparisons, multiple_testing.holm(
            [(entry["t_test"] or {}).get("p_value") for entry in comparisons])):
        entry["holm_p"] = adjusted
    equal_sd = seed_significance.equal_sd_test(seed_scores)
    return {"pooled_seed_sd": _pooled_record(pooled),
            "equal_sd": dataclasses.asdict(equal_sd) if equal_sd else None,
            "comparisons": comparisons,
            "seeds_needed": _seeds_needed(pooled, max(2, len(rows))) if pooled else None}


# The differences for which the report says how many seeds a system would detect them at the
# table's pooled sd: the pre-registered target (docs/preregistration.md) and twice it.
SEED_COUNT_DIFFERENCES = (0.5, 1.0)


# A seed count planned from the pooled sd alone misses its power about half the time; the
# report adds the count at this one-sided upper confidence bound of the sd (Browne 1995).
PLANNING_CONFIDENCE = 0.8


def _pooled_record(pooled):
    if pooled is None:
        return None
    return {**dataclasses.asdict(pooled),
            "ci95": list(seed_significance.sd_confidence_interval(pooled.sd, pooled.df))}


def _seeds_needed(pooled, systems):
    def counts(sd):
        return {f"{difference:g}": seed_significance.seeds_needed(sd, difference, systems=systems)
                for difference in SEED_COUNT_DIFFERENCES}

    bound = seed_significance.sd_upper_confidence_bound(pooled.sd, pooled.df, PLANNING_CONFIDENCE)
    return {"systems": systems, "seeds": counts(pooled.sd),
            "upper_bound": {"confidence": PLANNING_CONFIDENCE, "sd": bound,
                            "seeds": counts(bound)}}


def _table(grid_runner, entries_of, test, output, samples):
    rows = _score_rows(entries_of)
    return rows, _contrasts(grid_runner, entries_of, rows, test, output, samples)


def build(grid_runner, runs, command, samples=seed_significance.DEFAULT_SAMPLES):
    """The report as a JSON-able dict (see the module docstring)."""
    experiment = grid_runner.experiment
    collected = collect(grid_runner, runs)
    report = {"experiment": grid_runner.name, "command": command,
              "problem": experiment.problem, "hparams_set": experiment.hparams_set,
              "baseline": experiment.baseline, "checkpoint": experiment.checkpoint,
              "decode_hparams": experiment.decode_hparams, "systems": {}, "tests": {},
              "contrasts": {}, "parse_tests": {}, "samples": samples}
    for name, entries in collected.items():
        report["systems"][name] = {
            "model": experiment.system(name).model, "hparams": experiment.system(name).hparams,
            "runs": [scores for _, scores in entries]}
    for test in experiment.open_tests():
        report["tests"][test.name], report["contrasts"][test.name] = _table(
            grid_runner, _entries(collected, "translation", test), test,
            lambda run, test=test: os.path.join(run.directory, runner.test_output(test)), samples)
    if experiment.length_penalties:
        report["length_penalties"] = list(experiment.length_penalties)
        report["dev_set"] = experiment.dev_set.name
        report[length_penalty.SCORES_KEY] = {}
        report[length_penalty.SCORES_KEY + "_contrasts"] = {}
        for test in experiment.open_tests():
            rows, contrasts = _table(
                grid_runner, _entries(collected, length_penalty.SCORES_KEY, test), test,
                lambda run, test=test: os.path.join(run.directory,
                                                    length_penalty.test_output(test)), samples)
            for name, row in rows.items():
                alpha = {run.seed: scores["length_penalty"]["alpha"]
                         for run, scores in collected[name]}
                row["alpha"] = [alpha[seed] for seed in row["seeds"]]
            report[length_penalty.SCORES_KEY][test.name] = rows
            report[length_penalty.SCORES_KEY + "_contrasts"][test.name] = contrasts
    report["sealed"] = {test.name: _sealed_table(grid_runner, runs, test, samples)
                        for test in experiment.sealed_tests()}
    scored = {run.name for entries in collected.values() for run, _ in entries}
    report[backend_record.SCORES_KEY] = backend_record.mixture(
        [(run.name, scores) for entries in collected.values() for run, scores in entries])
    report["runs"] = {"total": len(runs), "finished": len(scored),
                      "unfinished": [run_progress(grid_runner, run) for run in runs
                                     if run.name not in scored]}
    for test in experiment.parse_tests:
        heads = {name: [scores["parse"][test.name]["UAS"] for _, scores in entries
                        if test.name in scores.get("parse", {})]
                 for name, entries in collected.items()}
        teacher = grid_runner.teacher_parse(test)
        baselines = None
        if any(heads.values()):  # read the gold trees only once a head has parsed them
            gold, _ = attachment.read_gold(grid_runner.path(test.gold))
            baselines = {name: scores.uas
                         for name, scores in attachment.chain_baselines(gold).items()}
        report["parse_tests"][test.name] = {
            "teacher": teacher, "baselines": baselines,
            "systems": {name: {"UAS": values, "UAS_mean_sd": _mean_sd(values)}
                        for name, values in heads.items() if values},
            "by_length": _uas_by_length(grid_runner, collected, test, teacher is not None)}
    return report


def _sealed_table(grid_runner, runs, test, samples):
    """A sealed test's scores and contrasts from its seal record, or what it waits for."""
    record = seal.read_record(grid_runner, test)
    if record is None:
        return {"opened": None, "unfinished_runs": len(seal.unfinished(grid_runner, runs))}
    by_name = {run.name: run for run in runs}
    entries_of = {}
    for run_name, scores in record["scores"].items():
        run = by_name.get(run_name)
        if run is not None:
            entries_of.setdefault(run.system.name, []).append((run, scores))
    rows, contrasts = _table(grid_runner, entries_of, test,
                             lambda run: seal.output_path(grid_runner, test, run), samples)
    return {"opened": record["opened"], "git": record["git"], "rows": rows,
            "contrasts": contrasts}


def _uas_by_length(grid_runner, collected, test, with_teacher):
    """`[{low, high, words, teacher, systems: {name: [UAS per seed]}}]` by gold sentence length.

    Read from the runs' parse outputs, so an archived run needs no rescoring;
    `teacher` is None without a teacher parse (`with_teacher` False).
    """
    parsed = {name: [archive.run_file(run, runner.parse_output(test))
                     for run, scores in entries if test.name in scores.get("parse", {})]
              for name, entries in collected.items()}
    parsed = {name: paths for name, paths in parsed.items() if paths}
    if not parsed:
        return []
    gold_path = grid_runner.path(test.gold)
    gold, lines = attachment.read_gold(gold_path)

    def groups(path):
        return attachment.attachment_scores_by_length(
            read_parsed(path), gold, test.length_edges, path, gold_path, lines)

    systems = {name: [groups(path) for path in paths] for name, paths in parsed.items()}
    teacher = groups(grid_runner.teacher_output(test)) if with_teacher else None
    return [{"low": low, "high": high, "words": counts.words,
             "teacher": teacher[index][2].uas if teacher else None,
             "systems": {name: [seed[index][2].uas for seed in seeds]
                         for name, seeds in systems.items()}}
            for index, (low, high, counts) in enumerate(next(iter(systems.values()))[0])]


def markdown(report, experiment):
    """`results.md` of a report."""
    lines = [f"# Experiment `{report['experiment']}`", ""]
    if experiment.description:
        lines += [experiment.description, ""]
    lines += ["```sh", report["command"], "```", "",
              f"Problem `{report['problem']}`, hparams set `{report['hparams_set']}`, tested "
              f"checkpoint: {report['checkpoint']}, decoding `{report['decode_hparams']}`. "
              f"Baseline: `{report['baseline']}`.", "",
              f"**{report['runs']['finished']} of {report['runs']['total']} runs finished**"
              + (" (the rest: the last section)." if report["runs"]["unfinished"] else "."), ""]
    lines += _backend_note(report.get(backend_record.SCORES_KEY) or {})
    for test, rows in report["tests"].items():
        lines += [f"## {test}: translation", ""] + _translation_table(rows) + [""]
        lines += _contrast_table(report["contrasts"].get(test))
    for test, rows in report.get(length_penalty.SCORES_KEY, {}).items():
        lines += [f"## {test}: translation, length penalty chosen on dev", "",
                  f"The same checkpoints decoded with the alpha among "
                  f"{', '.join(f'{alpha:g}' for alpha in report['length_penalties'])} whose "
                  f"translations of `{report['dev_set']}` score the highest BLEU for each run "
                  f"(`syntax_t2t/grid/length_penalty.py`); the rest of the decoding as above.", ""]
        lines += _translation_table(rows, alpha=True) + [""]
        lines += _contrast_table(report.get(length_penalty.SCORES_KEY + "_contrasts", {}).get(test))
    for test, block in report.get("sealed", {}).items():
        lines += [f"## {test}: translation (sealed test set)", ""]
        if not block["opened"]:
            lines += [f"Sealed: translated by each run, scored once every run has finished "
                      f"({block['unfinished_runs']} not yet).", ""]
            continue
        git = block["git"]
        lines += [f"Opened once, on {block['opened']}, at commit `{git['commit']}`"
                  + ("" if git.get("clean", True) else " (with uncommitted changes)")
                  + " (`syntax_t2t/grid/seal.py`).", ""]
        lines += _translation_table(block["rows"]) + [""] + _contrast_table(block["contrasts"])
    for test, block in report["parse_tests"].items():
        teacher = block["teacher"]
        lines += [f"## {test}: parse heads on gold trees", ""]
        if teacher:
            lines += [f"Teacher parser `{teacher['parser']}`: UAS {teacher['UAS']:.2f}"
                      + (f", LAS {teacher['LAS']:.2f}" if teacher.get("LAS") is not None else "")
                      + ".", ""]
        baselines = block.get("baselines")
        if baselines:
            lines += [f"Trees without syntax: each word on the previous word, UAS "
                      f"{baselines['previous_word']:.2f}; on the next word, "
                      f"{baselines['next_word']:.2f}.", ""]
        lines += ["| system | UAS (mean ± sd) | per seed | % of the teacher's UAS |",
                  "|---|---|---|---|"]
        for name, row in block["systems"].items():
            mean = row["UAS_mean_sd"][0]
            share = f"{100 * mean / teacher['UAS']:.1f}" if teacher and teacher["UAS"] else ""
            lines.append(f"| {name} | {_format(*row['UAS_mean_sd'])} | "
                         f"{', '.join(f'{v:.2f}' for v in row['UAS'])} | {share} |")
        lines.append("")
        lines += _uas_by_length_table(block.get("by_length") or [])
    lines += ["## Training", "",
              "| run | steps | best step (dev " + experiment.best_checkpoint_metric + ") | "
              "early stop | wall time | target tokens/s | backend |",
              "|---|---|---|---|---|---|---|"]
    for name, system in report["systems"].items():
        for scores in system["runs"]:
            lines.append(_training_row(name, scores))
    lines += ["", SIGNIFICANCE_NOTE.format(samples=report.get("samples", "?")), ""]
    unfinished = report["runs"]["unfinished"]
    if unfinished:
        lines += ["## Runs not finished", "",
                  "As the files stood when this report was written (`bin/grid --report_only` "
                  "writes it afresh).", "",
                  f"| run | stage | evaluated to step | best step (dev "
                  f"{experiment.best_checkpoint_metric}) | stages left |", "|---|---|---|---|---|"]
        for entry in unfinished:
            best = entry.get("best")
            lines.append(f"| {entry['run']} | {entry['stage']} | {entry.get('step', '')} | "
                         + (f"{best['step']} ({best['value']:.2f})" if best else "")
                         + f" | {', '.join(entry.get('stages_left', []))} |")
        lines.append("")
    return "\n".join(lines)


def _uas_by_length_table(groups):
    """UAS by gold sentence length: the teacher's, then each system's seed mean (% of the teacher's)."""
    if not groups:
        return []
    names = list(groups[0]["systems"])
    lines = ["UAS by gold sentence length (words; systems: mean over seeds, in brackets the "
             "share of the teacher's UAS on the same sentences):", "",
             "| sentence length | words | teacher | " + " | ".join(names) + " |",
             "|---" * (3 + len(names)) + "|"]
    for group in groups:
        span = f"{group['low']}-{group['high']}" if group["high"] else f"{group['low']}+"
        teacher = group["teacher"]
        cells = []
        for name in names:
            mean = statistics.fmean(group["systems"][name])
            cells.append(f"{mean:.1f}" + (f" ({100 * mean / teacher:.0f}%)" if teacher else ""))
        lines.append(f"| {span} | {group['words']} | "
                     f"{'' if teacher is None else f'{teacher:.1f}'} | {' | '.join(cells)} |")
    return lines + [""]


def _translation_table(rows, alpha=False):
    """The markdown table of `_score_rows`, with each seed's alpha when `alpha`."""
    lines = ["| system | seeds | BLEU (mean ± sd) | BLEU per seed | chrF (mean ± sd) |"
             + (" alpha per seed |" if alpha else ""),
             "|---|---|---|---|---|" + ("---|" if alpha else "")]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {len(row['seeds'])} | {_format(*row['BLEU_mean_sd'])} | "
            f"{', '.join(f'{v:.2f}' for v in row['BLEU'])} | {_format(*row['chrF_mean_sd'])} |"
            + (f" {', '.join(f'{value:g}' for value in row['alpha'])} |" if alpha else ""))
    return lines


def _p(value):
    return "" if value is None else f"{value:.3f}"


def _seeds_needed_lines(needed):
    if not needed:
        return []

    def counts(seeds):
        return "; ".join(f"{difference} BLEU from {count if count else 'more than 10,000'} seeds"
                         for difference, count in seeds.items())

    line = (f"Seeds a system needed at this sd, with each of the table's {needed['systems']} "
            f"systems at that count and the sd pooled over them (80% power, 5% two-sided, t; "
            f"`seed_significance.seeds_needed`): {counts(needed['seeds'])}.")
    bound = needed["upper_bound"]
    line += (f" The sd is an estimate too; at its one-sided {bound['confidence']:.0%} upper "
             f"confidence bound, {bound['sd']:.3f} BLEU (χ², Browne 1995): "
             f"{counts(bound['seeds'])}.")
    return [line, ""]


def _pooled_line(pooled):
    if not pooled:
        return "No system has two seeds: no seed sd, so no p-value and no detectable Δ."
    interval = pooled.get("ci95")
    return ("Seed sd pooled over the systems with several seeds: "
            f"{pooled['sd']:.3f} BLEU ({counted(pooled['df'], 'degree')} of freedom, "
            f"{counted(pooled['systems'], 'system')}"
            + (f"; 95% CI [{interval[0]:.3f}, {interval[1]:.3f}], χ²" if interval else "") + ").")


def _equal_sd_sentence(test):
    if not test:
        return ""
    return (f" Pooling assumes one seed sd for every system; Bartlett's test of that over the "
            f"{test['systems']} systems: χ² {test['statistic']:.2f} at {counted(test['df'], 'degree')} "
            f"of freedom, p = {_p(test['p_value'])} (little power with few seeds a system: a large p "
            "does not show the sds equal).")


def _contrast_table(contrasts):
    """The comparisons of one score table: Δ, the t test and its Holm adjustment, the bootstraps."""
    if not contrasts or not contrasts["comparisons"]:
        return []
    lines = [_pooled_line(contrasts["pooled_seed_sd"]) + _equal_sd_sentence(contrasts.get("equal_sd")),
             "",
             *_seeds_needed_lines(contrasts.get("seeds_needed")),
             "| comparison | seeds | Δ BLEU | 95% CI (t) | p (t, pooled seed sd) | p Holm | "
             "detectable Δ (t) | p (two-level bootstrap) | p per seed (paired bootstrap) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for entry in contrasts["comparisons"]:
        tested, bootstrap = entry["t_test"], entry["bootstrap"]
        per_seed = ", ".join(f"s{seed}: {p:.3f}" for seed, p in entry["per_seed_p"].items())
        lines.append(
            f"| {entry['system']} − {entry['against']} | {entry['seeds'][1]} vs "
            f"{entry['seeds'][0]} | {entry['delta']:+.2f} | "
            + (f"[{tested['ci'][0]:+.2f}, {tested['ci'][1]:+.2f}] | {_p(tested['p_value'])}"
               if tested else " | ")
            + f" | {_p(entry.get('holm_p'))} | {_detectable(entry['detectable'])} | "
            + (_p(bootstrap["p_value"]) if bootstrap else "")
            + f" | {per_seed} |")
    return lines + [""]


SIGNIFICANCE_NOTE = (
    "Significance, every p two-sided. 'p (t, pooled seed sd)': Student's t on the difference of "
    "the seed means of corpus BLEU, with the seed standard deviation pooled over every system "
    "of the table that has several seeds (`seed_significance.seed_t_test`), so that a system "
    "with one seed is tested against the seed variance the others show; it counts seed "
    "variance, not test-sentence variance. 'p Holm': those p-values Holm–Bonferroni-adjusted "
    "over the table's comparisons, the family the experiment names (`Experiment.contrasts`). "
    "'detectable Δ (t)': the smallest difference these seed counts detect with 80% power at "
    "the 5% level at the pooled sd (t quantiles). 'p (two-level bootstrap)': resampling test "
    "sentences and seeds (Clark et al. 2011; `seed_significance.compare_over_seeds`), given "
    "only when both systems have two seeds or more (with one, it sees no seed variance; "
    "with n, resampling the seeds counts (n - 1) / n of their variance, half at two seeds, "
    "so with few seeds the t test is the one to read). "
    "'p per seed': the same bootstrap on the two runs of one seed, test-sentence variance "
    "only. {samples} resamples. Settings were chosen on the dev set; test scores are "
    "reported once.")


def _backend_note(grouped):
    """A line naming the backend the runs were trained on; a warning when there are several."""
    if not grouped:
        return []
    if len(grouped) == 1:
        label = next(iter(grouped))
        if label == backend_record.UNRECORDED:
            return ["The Keras backend the runs were trained on was not recorded (they were "
                    "scored before bin/grid recorded it).", ""]
        return [f"Trained on the {label} backend.", ""]
    parts = "; ".join(f"{label}: {', '.join(names)}" for label, names in sorted(grouped.items()))
    return [f"**Mixed backends**: these runs were not all trained on one Keras backend ({parts}). "
            "The backends compute the same models to float rounding, but training amplifies "
            "rounding, so a run's scores on the two can differ as two seeds' do; compare "
            "systems trained on one backend where it matters "
            "(`syntax_t2t/grid/backend_record.py`).",
            ""]


def _training_row(name, scores):
    best = scores.get("best") or {}
    best_text = f"{best['step']} ({best['value']:.2f})" if best else ""
    speed = scores.get("tokens_per_second")
    return (f"| {name} seed {scores['seed']} | {scores['steps']} | {best_text} | "
            f"{scores.get('stopped_early') or 'no'} | {_hours(scores['train_seconds'])} | "
            f"{f'{speed:.0f}' if speed else ''} | {backend_record.label(scores)} |")


def write(grid_runner, runs, command, samples=seed_significance.DEFAULT_SAMPLES):
    """Writes `results.json`, `results.md` and the plots into the grid directory; returns the report."""
    report = build(grid_runner, runs, command, samples)
    output_dir = grid_runner.output_dir
    runner.write_json(os.path.join(output_dir, "results.json"), report)
    io_utils.atomic_write_text(os.path.join(output_dir, "results.md"),
                               markdown(report, grid_runner.experiment))
    tables = [(report["tests"], "", "BLEU"),
              (report.get(length_penalty.SCORES_KEY, {}), ".dev_alpha",
               "BLEU at the dev-chosen alpha")]
    for tests, suffix, metric in tables:
        for test, rows in tests.items():
            if rows:
                plot_system_scores({name: row["BLEU"] for name, row in rows.items()},
                                   os.path.join(output_dir, f"bleu_{test}{suffix}.png"), metric)
    curves, best_steps, systems = {}, {}, {}
    for run in runs:
        history = validation.read_history(run.directory)  # empty when there is no file
        if history["evaluations"]:
            curves[run.name] = history["evaluations"]
            best_steps[run.name] = (history.get("best") or {}).get("step")
            systems[run.name] = run.system.name
    if curves:
        plot_learning_curves(curves, os.path.join(output_dir, "learning_curves.png"),
                             title=grid_runner.name, best_steps=best_steps, systems=systems)
    return report
