"""The private Keras code biozoo relies on (biozoo/_keras_internals.py) is what it was checked
against: an upgrade that changes any of it fails here, naming it, before it can silently
change training, clipping, conversion or seeding."""

import ast
import pathlib

import numpy as np
import pytest

from biozoo import _keras_internals as K

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "biozoo"


@pytest.mark.parametrize("name", sorted(K.CHECKED))
def test_private_keras_code_is_unchanged(name):
    digest = K.source_digest(name)
    version = f"KerasHub {K.CHECKED_KERAS_HUB_VERSION}" if name.startswith("keras_hub.") else f"Keras {K.CHECKED_KERAS_VERSION}"
    assert digest == K.CHECKED[name], (
        f"{name} changed since {version} (digest {digest}); re-read it, adapt "
        "biozoo/_keras_internals.py and update CHECKED.")


def test_no_other_module_imports_keras_internals():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_keras_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.startswith(("keras.src", "keras_hub.src"))]
    assert offenders == []


def test_digest_sees_a_change(monkeypatch):
    """The check can fail: a replaced function gives another digest."""
    from keras.src.losses import loss

    before = K.source_digest("keras.src.losses.loss.unscale_loss_for_distribution")
    monkeypatch.setattr(loss, "unscale_loss_for_distribution", lambda value: value * 2)
    assert K.source_digest("keras.src.losses.loss.unscale_loss_for_distribution") != before


def test_private_attributes_used_exist():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    assert isinstance(K.loss_tracker(model), keras.metrics.Mean)
    optimizer = keras.optimizers.AdamW()
    optimizer.build(model.trainable_variables)
    assert optimizer._distribution_strategy is not None
    x, y, w = K.unpack_x_y_sample_weight((np.ones(2), np.zeros(2)))
    assert w is None and y is not None


def test_unallocated_variables_allocate_nothing():
    import keras

    with K.unallocated_variables():
        layer = keras.layers.Dense(4)
        layer.build((None, 3))
    assert tuple(layer.kernel.shape) == (3, 4)
    assert layer.kernel._value is None  # no memory behind it


def test_attention_without_dropout_nests_and_restores():
    """Inference attention's context, nested (or entered twice at once): dropout 0 and the mask
    hook inside; after the outer block, each layer as it was."""
    import keras

    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.attention = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1)

    model = Block()
    layer = model.attention

    def untouched():
        return layer._dropout == 0.1 and "_compute_attention" not in vars(layer)

    with K.attention_without_dropout(model, lambda mask, query: mask):
        assert layer._dropout == 0.0 and "_compute_attention" in vars(layer)
        with K.attention_without_dropout(model, lambda mask, query: mask):
            assert layer._dropout == 0.0
        assert layer._dropout == 0.0 and "_compute_attention" in vars(layer)
    assert untouched()
    with pytest.raises(RuntimeError):
        with K.attention_without_dropout(model, lambda mask, query: mask):
            raise RuntimeError
    assert untouched()
