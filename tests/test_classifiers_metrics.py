"""Macro precision / recall / F1 of netemu.kernels.classifiers (G-Fedfilt Table VI)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netemu.kernels.classifiers import confusion, macro_prf

# y = [0,0,0,1,1,2], pred = [0,0,1,1,2,2]: C = [[2,1,0],[0,1,1],[0,0,1]]
Y = np.array([0, 0, 0, 1, 1, 2])
PRED = np.array([0, 0, 1, 1, 2, 2])


def test_confusion_counts_true_rows_against_predicted_columns():
    assert confusion(Y, PRED, 3).tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]


def test_macro_scores_match_the_hand_computed_confusion_matrix():
    # precision per class 2/2, 1/2, 1/2; recall 2/3, 1/2, 1/1; F1 4/5, 1/2, 2/3
    p, r, f = macro_prf(Y, PRED, 3)
    assert p == pytest.approx(2 / 3)
    assert r == pytest.approx(13 / 18)
    assert f == pytest.approx(59 / 90)


def test_classes_absent_from_labels_and_predictions_do_not_dilute_the_mean():
    assert macro_prf(Y, PRED, 10) == pytest.approx(macro_prf(Y, PRED, 3))


def test_perfect_predictions_score_one():
    assert macro_prf(Y, Y, 3) == (1.0, 1.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=40))
def test_agrees_with_scikit_learn_macro_averages(pairs):
    from sklearn.metrics import precision_recall_fscore_support

    y, pred = np.array(pairs).T
    expect = precision_recall_fscore_support(y, pred, average="macro", zero_division=0)[:3]
    assert macro_prf(y, pred, 5) == pytest.approx(expect)


def _rows(world, names):
    return [(rnd, m, v) for _, rnd, _, m, v in world.metrics if m in names]


def test_graphfl_reports_macro_scores_only_when_asked_and_leaves_accuracy_unchanged():
    from test_graphfl import setup

    plain, _, _ = setup("mean-filter", rounds=3)
    scored, _, _ = setup("mean-filter", rounds=3, metrics=("accuracy", "f1", "precision"))
    plain.run()
    scored.run()
    accuracies = {"accuracy_clients", "accuracy"}
    assert _rows(plain, accuracies) == _rows(scored, accuracies)
    assert not _rows(plain, {"f1_clients", "f1", "precision_clients", "recall_clients"})
    assert len(_rows(scored, {"f1_clients"})) == len(_rows(scored, {"precision"})) == 3
    assert not _rows(scored, {"recall_clients", "recall"})
    assert all(0.0 <= v <= 1.0 for _, _, v in _rows(scored, {"f1_clients", "f1", "precision_clients"}))


@pytest.mark.parametrize("bad", [("accuracy", "auc"), "f1", ()])
def test_the_classifier_tasks_refuse_unknown_or_empty_metric_lists(bad):
    from netemu.config import ConfigError
    from netemu.tasks.supervised import SoftmaxParams

    with pytest.raises(ConfigError, match="metrics"):
        SoftmaxParams(metrics=bad)


def test_graphfl_reports_the_task_metrics_asked_for_the_loss_among_them():
    from test_graphfl import setup

    from netemu.kernels.classifiers import cross_entropy

    world, _, task = setup("mean-filter", rounds=2, metrics=("loss",))
    world.run()
    assert not _rows(world, {"accuracy_clients", "accuracy"})
    rows = _rows(world, {"loss_clients", "loss"})
    assert sorted((r, m) for r, m, _ in rows) == [(1, "loss"), (1, "loss_clients"), (2, "loss"), (2, "loss_clients")]
    server = world.actors["server"]
    st = server.state
    expected = np.mean([cross_entropy(st.model, row, *task.global_test) for row in server.Psi])
    assert [v for r, m, v in rows if (r, m) == (2, "loss")] == [pytest.approx(expected, rel=1e-12)]


def test_graphfl_evaluates_every_evaluate_every_rounds_and_after_the_last():
    from test_graphfl import setup

    world, _, _ = setup("mean-filter", rounds=5, evaluate_every=2)
    world.run()
    assert sorted(r for r, _, _ in _rows(world, {"accuracy"})) == [2, 4, 5]
    assert sorted(r for r, _, _ in _rows(world, {"latency_s"})) == [1, 2, 3, 4, 5]  # the timing: every round


@pytest.mark.parametrize(("on", "names"), [("server", {"accuracy"}), ("clients", {"accuracy_clients"}),
                                           ("both", {"accuracy", "accuracy_clients"})])
def test_graphfl_reports_where_the_task_evaluates_under_the_general_algorithms_names(on, names):
    from test_graphfl import setup

    world, _, _ = setup("fedpnp-soft", rounds=2, evaluate_on=on)
    world.run()
    assert {m for _, _, _, m, _ in world.metrics if m.startswith("accuracy")} == names
