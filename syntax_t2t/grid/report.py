"""The report of a grid: `results.md`, `results.json` and the plots, from the finished runs.

Rows are written for every system with at least one scored run, so a grid
that spans several sessions reports what has arrived (the seed counts say
how much). Per test set and system: cased sacreBLEU and chrF as mean ± sample
standard deviation over seeds and each seed's value; the difference of the
means against the baseline with the seed-aware significance test
(`evaluation/seed_significance.py`, all seeds of both systems) and, per seed
that both systems have, sacreBLEU's paired bootstrap of that pair; where the
experiment lists length penalties, the same table at the alpha each run's
dev translations chose (`grid/length_penalty.py`), with each seed's alpha;
the parse heads' UAS/LAS on gold trees beside the teacher parser's, overall and
by gold sentence length (`ParseTest.length_edges`); steps, training
wall time and target tokens/s of each run; and where each unfinished run
stands (not started, training with its newest evaluation and best so far, or
testing, with the stages left).
"""

import os
import statistics

from syntax_t2t import io_utils
from syntax_t2t.decoding.parse_file import read_parsed
from syntax_t2t.evaluation import attachment, seed_significance, translation
from syntax_t2t.evaluation.training_plots import plot_learning_curves, plot_system_scores
from syntax_t2t.grid import archive, length_penalty, runner
from syntax_t2t.training import validation


def _mean_sd(values):
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _format(mean, sd, digits=2):
    if mean is None:
        return ""
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


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


def _translation_rows(grid_runner, collected, test, key, output, samples):
    """Per system: the scores `scores[key][test]` over seeds, and the tests against the baseline.

    `output(test)` is the run-relative file of the translations that were scored;
    runs without `scores[key][test]` (scored before the experiment had that
    stage) are left out.
    """
    experiment = grid_runner.experiment
    references = translation.read_segments(grid_runner.path(test.reference))
    entries_of = {name: [(run, scores[key][test.name]) for run, scores in entries
                         if test.name in scores.get(key, {})]
                  for name, entries in collected.items()}
    entries_of = {name: entries for name, entries in entries_of.items() if entries}
    outputs = {name: {run.seed: translation.read_segments(os.path.join(run.directory,
                                                                        output(test)))
                      for run, _ in entries}
               for name, entries in entries_of.items()}
    baseline = entries_of.get(experiment.baseline, [])
    baseline_bleu = [scores["BLEU"] for _, scores in baseline]
    rows = {}
    for name, entries in entries_of.items():
        bleu = [scores["BLEU"] for _, scores in entries]
        chrf = [scores["chrF"] for _, scores in entries]
        row = {"seeds": [run.seed for run, _ in entries], "BLEU": bleu, "chrF": chrf,
               "BLEU_mean_sd": _mean_sd(bleu), "chrF_mean_sd": _mean_sd(chrf)}
        if name != experiment.baseline and baseline:
            base, mine = outputs[experiment.baseline], outputs[name]
            comparison = seed_significance.compare_translations(
                list(base.values()), list(mine.values()), references, samples=samples)
            row["vs_baseline"] = {"delta": comparison.delta, "p_value": comparison.p_value,
                                  "ci": [comparison.ci_low, comparison.ci_high],
                                  "seeds": list(comparison.seeds),
                                  "detectable": seed_significance.detectable_difference(
                                      baseline_bleu, bleu)}
            per_seed = {}
            for seed in sorted(set(base) & set(mine)):
                result = translation.paired_bootstrap((experiment.baseline, base[seed]),
                                                      [(name, mine[seed])], references,
                                                      samples=samples)
                per_seed[str(seed)] = next(c.p_value for c in result if c.metric == "BLEU")
            row["per_seed_bootstrap_p"] = per_seed
        rows[name] = row
    return rows


def build(grid_runner, runs, command, samples=seed_significance.DEFAULT_SAMPLES):
    """The report as a JSON-able dict (see the module docstring)."""
    experiment = grid_runner.experiment
    collected = collect(grid_runner, runs)
    report = {"experiment": grid_runner.name, "command": command,
              "problem": experiment.problem, "hparams_set": experiment.hparams_set,
              "baseline": experiment.baseline, "checkpoint": experiment.checkpoint,
              "decode_hparams": experiment.decode_hparams, "systems": {}, "tests": {},
              "parse_tests": {}}
    for name, entries in collected.items():
        report["systems"][name] = {
            "model": experiment.system(name).model, "hparams": experiment.system(name).hparams,
            "runs": [scores for _, scores in entries]}
    for test in experiment.translation_tests:
        report["tests"][test.name] = _translation_rows(
            grid_runner, collected, test, "translation", runner.test_output, samples)
    if experiment.length_penalties:
        report["length_penalties"] = list(experiment.length_penalties)
        report["dev_set"] = experiment.dev_set.name
        report[length_penalty.SCORES_KEY] = {}
        for test in experiment.translation_tests:
            rows = _translation_rows(grid_runner, collected, test, length_penalty.SCORES_KEY,
                                     length_penalty.test_output, samples)
            for name, row in rows.items():
                alpha = {run.seed: scores["length_penalty"]["alpha"]
                         for run, scores in collected[name]}
                row["alpha"] = [alpha[seed] for seed in row["seeds"]]
            report[length_penalty.SCORES_KEY][test.name] = rows
    scored = {run.name for entries in collected.values() for run, _ in entries}
    report["runs"] = {"total": len(runs), "finished": len(scored),
                      "unfinished": [grid_runner.progress(run) for run in runs
                                     if run.name not in scored]}
    for test in experiment.parse_tests:
        heads = {name: [scores["parse"][test.name]["UAS"] for _, scores in entries
                        if test.name in scores.get("parse", {})]
                 for name, entries in collected.items()}
        teacher = grid_runner.teacher_parse(test)
        report["parse_tests"][test.name] = {
            "teacher": teacher,
            "systems": {name: {"UAS": values, "UAS_mean_sd": _mean_sd(values)}
                        for name, values in heads.items() if values},
            "by_length": _uas_by_length(grid_runner, collected, test, teacher is not None)}
    return report


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
    for test, rows in report["tests"].items():
        lines += [f"## {test}: translation", ""] + _translation_table(rows) + [""]
    for test, rows in report.get(length_penalty.SCORES_KEY, {}).items():
        lines += [f"## {test}: translation, length penalty chosen on dev", "",
                  f"The same checkpoints decoded with the alpha among "
                  f"{', '.join(f'{alpha:g}' for alpha in report['length_penalties'])} whose "
                  f"translations of `{report['dev_set']}` score the highest BLEU for each run "
                  f"(`syntax_t2t/grid/length_penalty.py`); the rest of the decoding as above.", ""]
        lines += _translation_table(rows, alpha=True) + [""]
    for test, block in report["parse_tests"].items():
        teacher = block["teacher"]
        lines += [f"## {test}: parse heads on gold trees", ""]
        if teacher:
            lines += [f"Teacher parser `{teacher['parser']}`: UAS {teacher['UAS']:.2f}.", ""]
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
              "early stop | wall time | target tokens/s |", "|---|---|---|---|---|---|"]
    for name, system in report["systems"].items():
        for scores in system["runs"]:
            lines.append(_training_row(name, scores))
    lines += ["", "Significance: 'p (all seeds)' is the two-level paired bootstrap over test "
              "sentences and training seeds (Clark et al. 2011; "
              "`syntax_t2t/evaluation/seed_significance.py`), 'p per seed' sacreBLEU's paired "
              "bootstrap of the two systems' runs with the same seed. 'detectable Δ' is the "
              "smallest BLEU difference that these seeds, at the spread of their scores, "
              "detect with 80% power at the 5% level (`seed_significance."
              "detectable_difference`, seed variance only: a lower bound). Settings were "
              "chosen on the dev set; test scores are reported once.", ""]
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
    """The markdown table of `_translation_rows`, with each seed's alpha when `alpha`."""
    lines = ["| system | seeds | BLEU (mean ± sd) | BLEU per seed | chrF (mean ± sd) | "
             "Δ BLEU | 95% CI | p (all seeds) | detectable Δ | "
             "p per seed (paired bootstrap) |" + (" alpha per seed |" if alpha else ""),
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if alpha else "")]
    for name, row in rows.items():
        versus = row.get("vs_baseline")
        per_seed = ", ".join(f"s{seed}: {p:.3f}"
                             for seed, p in row.get("per_seed_bootstrap_p", {}).items())
        lines.append(
            f"| {name} | {len(row['seeds'])} | {_format(*row['BLEU_mean_sd'])} | "
            f"{', '.join(f'{v:.2f}' for v in row['BLEU'])} | "
            f"{_format(*row['chrF_mean_sd'])} | "
            + (f"{versus['delta']:+.2f} | [{versus['ci'][0]:+.2f}, {versus['ci'][1]:+.2f}] | "
               f"{versus['p_value']:.3f} | {_detectable(versus['detectable'])}"
               if versus else " |  |  | ")
            + f" | {per_seed} |"
            + (f" {', '.join(f'{value:g}' for value in row['alpha'])} |" if alpha else ""))
    return lines


def _training_row(name, scores):
    best = scores.get("best") or {}
    best_text = f"{best['step']} ({best['value']:.2f})" if best else ""
    speed = scores.get("tokens_per_second")
    return (f"| {name} seed {scores['seed']} | {scores['steps']} | {best_text} | "
            f"{scores.get('stopped_early') or 'no'} | {_hours(scores['train_seconds'])} | "
            f"{f'{speed:.0f}' if speed else ''} |")


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
