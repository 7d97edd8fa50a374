"""The grid's learning-curve figure: one colour per run in every panel, every run in the legend."""

from unittest import mock

from syntax_t2t.evaluation import training_plots


def test_a_run_keeps_its_colour_in_panels_that_lack_other_runs(tmp_path):
    # `a_transformer` has no parse UAS, so the UAS panel draws `b_dep_parse` alone.
    runs = {"a_transformer": [{"step": 500, "bleu": 10.0, "loss/nmt": 3.0},
                              {"step": 1000, "bleu": 20.0, "loss/nmt": 2.5}],
            "b_dep_parse": [{"step": 500, "bleu": 8.0, "loss/nmt": 3.2, "uas": 0.6},
                            {"step": 1000, "bleu": 19.0, "loss/nmt": 2.6, "uas": 0.7}]}
    saved = []
    with mock.patch.object(training_plots, "_save", lambda figure, path: saved.append(figure)):
        training_plots.plot_learning_curves(runs, tmp_path / "curves.png",
                                            best_steps={"a_transformer": 1000, "b_dep_parse": 500})
    [figure] = saved
    colours = {}
    for axis in figure.axes:
        for line in axis.get_lines():
            if not line.get_label().startswith("_"):  # the best-step markers are unlabelled
                colours.setdefault(line.get_label(), set()).add(line.get_color())
    assert set(colours) == set(runs)
    assert all(len(seen) == 1 for seen in colours.values()), colours
    assert colours["a_transformer"] != colours["b_dep_parse"]
    legends = [axis.get_legend() for axis in figure.axes if axis.get_legend() is not None]
    assert [[text.get_text() for text in legend.get_texts()] for legend in legends] == [sorted(runs)]
