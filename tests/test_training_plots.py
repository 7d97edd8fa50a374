"""The grid's learning-curve figure: one colour per run in every panel, every run in the legend."""

from unittest import mock

from syntax_t2t.evaluation import training_plots


def drawn(runs, **kwargs):
    """The figure `plot_learning_curves` would save, and its labelled lines' (colour, style) by run."""
    saved = []
    with mock.patch.object(training_plots, "_save", lambda figure, path: saved.append(figure)):
        training_plots.plot_learning_curves(runs, "unused.png", **kwargs)
    [figure] = saved
    styles = {}
    for axis in figure.axes:
        for line in axis.get_lines():
            if not line.get_label().startswith("_"):
                styles.setdefault(line.get_label(), set()).add((str(line.get_color()), line.get_linestyle()))
    return figure, styles


def test_a_run_keeps_its_colour_in_panels_that_lack_other_runs():
    # `a_transformer` has no parse UAS, so the UAS panel draws `b_dep_parse` alone.
    runs = {"a_transformer": [{"step": 500, "bleu": 10.0, "loss/nmt": 3.0},
                              {"step": 1000, "bleu": 20.0, "loss/nmt": 2.5}],
            "b_dep_parse": [{"step": 500, "bleu": 8.0, "loss/nmt": 3.2, "uas": 0.6},
                            {"step": 1000, "bleu": 19.0, "loss/nmt": 2.6, "uas": 0.7}]}
    figure, styles = drawn(runs, best_steps={"a_transformer": 1000, "b_dep_parse": 500})
    # Labelled lines only: the best-step markers are unlabelled.
    colours = {run: {colour for colour, _ in seen} for run, seen in styles.items()}
    assert set(colours) == set(runs)
    assert all(len(seen) == 1 for seen in colours.values()), colours
    assert colours["a_transformer"] != colours["b_dep_parse"]
    legends = [axis.get_legend() for axis in figure.axes if axis.get_legend() is not None]
    assert [[text.get_text() for text in legend.get_texts()] for legend in legends] == [sorted(runs)]


def test_a_systems_seeds_share_a_colour_and_twelve_systems_have_twelve():
    curve = [{"step": 500, "bleu": 10.0}, {"step": 1000, "bleu": 20.0}]
    runs = {f"system{index:02d}/seed1": curve for index in range(12)}
    runs.update({"system00/seed2": curve, "system00/seed3": curve})
    systems = {name: name.split("/")[0] for name in runs}
    _, styles = drawn(runs, systems=systems)
    assert all(len(seen) == 1 for seen in styles.values()), styles
    [(colour_1, style_1)], [(colour_2, style_2)], [(colour_3, style_3)] = (
        styles[f"system00/seed{k}"] for k in (1, 2, 3))
    assert colour_1 == colour_2 == colour_3
    assert len({style_1, style_2, style_3}) == 3
    colours = {next(iter(styles[f"system{index:02d}/seed1"]))[0] for index in range(12)}
    assert len(colours) == 12


def test_the_best_checkpoint_is_ringed_on_its_runs_line():
    runs = {"a/seed1": [{"step": 500, "bleu": 10.0}, {"step": 1000, "bleu": 25.0},
                        {"step": 1500, "bleu": 22.0}]}
    figure, _ = drawn(runs, best_steps={"a/seed1": 1000})
    rings = [line for line in figure.axes[0].get_lines() if line.get_label().startswith("_")]
    assert [(list(ring.get_xdata()), list(ring.get_ydata())) for ring in rings] == [([1000], [25.0])]
