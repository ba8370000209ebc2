"""Length-sorted micro-batches give the whole batch's update.

A batch of mixed lengths (with filler rows, and for NER with ignored sub-tokens, so every
micro-batch holds a different number of valid labels) is trained one step with plain SGD at
rate 1, so the change of every weight is its gradient: run as one batch or as 2, 4 or 7
micro-batches, the gradients and the reported loss agree."""

import numpy as np
import pytest

LENGTHS = [3, 17, 9, 24, 5, 12, 2, 20, 7, 0, 0, 0]  # 0: filler rows (all padding)


def tiny_backbone():
    import keras

    from biozoo.models.bert.backbone import BertBackbone

    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                        max_sequence_length=32, dropout=0.0)


def batch(kind):
    rng = np.random.default_rng(0)
    width = 32  # wider than the longest row, as a padded batch is
    token_ids = np.zeros((len(LENGTHS), width), "int32")
    mask = np.zeros_like(token_ids)
    for row, n in enumerate(LENGTHS):
        token_ids[row, :n] = rng.integers(1, 60, n)
        mask[row, :n] = 1
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}
    if kind == "ner":
        y = np.where(mask == 1, rng.integers(0, 3, mask.shape), -100)
        y[rng.random(mask.shape) < 0.3] = -100  # non-first sub-tokens
        return x, y.astype("int32")
    return x, np.array([rng.integers(0, 3) if n else -100 for n in LENGTHS], "int32")


def task_for(kind):
    from biozoo.tasks.sequence_classifier import SequenceClassifier
    from biozoo.tasks.token_classifier import TokenClassifier

    if kind == "ner":
        return TokenClassifier(backbone=tiny_backbone(), label_names=["O", "B-X", "I-X"], dropout=0.0)
    return SequenceClassifier(backbone=tiny_backbone(), label_names=["a", "b", "c"], dropout=0.0)


def one_step(kind, micro_batches):
    import keras

    task = task_for(kind)
    task.micro_batches = micro_batches
    task.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0))
    before = [w.numpy().copy() for w in task.trainable_weights]
    x, y = batch(kind)
    loss = float(task.train_on_batch(x, y, return_dict=True)["loss"])
    return loss, [b - w.numpy() for b, w in zip(before, task.trainable_weights)]


@pytest.mark.parametrize("kind", ["ner", "re"])
def test_micro_batches_give_the_whole_batch_gradient(kind):
    x, y = batch(kind)
    order = np.argsort(-x["padding_mask"].sum(1), kind="stable")
    valid_per_part = [int((y[part] != -100).sum()) for part in np.split(order, 4)]
    assert len(set(valid_per_part)) > 1  # unequal parts: a plain mean of their losses would be wrong

    loss, gradients = one_step(kind, 1)
    assert max(float(np.abs(g).max()) for g in gradients) > 1e-3
    for parts in (2, 4, 7):  # 7 does not divide the 12 rows: every row still counts
        micro_loss, micro_gradients = one_step(kind, parts)
        assert micro_loss == pytest.approx(loss, rel=1e-6)
        for g, micro in zip(gradients, micro_gradients):
            np.testing.assert_allclose(micro, g, rtol=0, atol=1e-6)


def test_micro_batches_follow_the_model_and_shapes():
    """finetune uses 4 micro-batches only where shapes may change per step and the loss ignores
    padding, and always a count that divides each replica's batch."""
    from biozoo.tasks.question_answerer import QuestionAnswerer
    from biozoo.train.finetune import Hyperparameters, micro_batches

    auto, six = Hyperparameters(), Hyperparameters(micro_batches=6)
    ner = task_for("ner")
    assert micro_batches(auto, ner, 32, fixed_shapes=False) == 4
    assert micro_batches(auto, ner, 32, fixed_shapes=True) == 1  # XLA / static shapes: one shape per step
    assert micro_batches(six, ner, 16, fixed_shapes=False) == 2
    assert micro_batches(auto, ner, 6, fixed_shapes=False) == 2
    assert not QuestionAnswerer.padding_invariant_loss  # span logits cover the padding, as in BERT's run_squad
    with pytest.raises(ValueError, match="micro-batches"):
        micro_batches(Hyperparameters(micro_batches=0), ner, 32, fixed_shapes=False)
