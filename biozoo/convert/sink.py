"""Where converted tensors go. `H5WeightsSink` writes them straight into the preset's
`model.weights.h5`, one tensor at a time, for a backbone built without allocating its
variables (`keras.StatelessScope`): converting a checkpoint never holds the whole model in
memory."""

from __future__ import annotations

import numpy as np

from biozoo import _keras_internals
from biozoo.errors import CheckpointError


def _placeholder_store_class():
    class PlaceholderStore(_keras_internals.h5_store_class()):
        """Keras' own weights-file writer, walked by Keras' own `_save_state`, except that each
        variable becomes an empty dataset of its shape, filled later as its tensor arrives."""

        def __init__(self, path):
            super().__init__(path, mode="w")
            self.datasets = {}

        def __setitem__(self, key, value):
            path = getattr(value, "path", None)
            if path is None or not hasattr(value, "shape"):
                raise TypeError(f"not a variable: {type(value).__name__}")
            if not self._h5_entry_initialized:
                self._create_h5_group(self._h5_entry_path)
            dataset = self._h5_entry_group.create_dataset(key, shape=tuple(value.shape), dtype=np.dtype(value.dtype))
            self.datasets[path] = dataset.name

    return PlaceholderStore


class H5WeightsSink:
    """Stream converted tensors into a Keras `.weights.h5` laid out for `backbone`, which may be
    built lazily (no variable memory). `close()` finishes the file."""

    def __init__(self, weights_path, backbone):
        self.path = weights_path
        self.shapes = {v.path: tuple(v.shape) for v in backbone.weights}
        self._store = _placeholder_store_class()(weights_path)
        try:
            _keras_internals.save_state(backbone, self._store)
        except BaseException:
            self._store.close()
            raise
        self._file = self._store.h5_file
        unplaced = set(self.shapes) - set(self._store.datasets)
        if unplaced:
            self._store.close()
            raise CheckpointError(f"no place in the weights file for: {sorted(unplaced)}")

    def assign(self, path, value):
        dataset = self._file[self._store.datasets[path]]
        dataset[...] = value.astype(dataset.dtype, copy=False)

    def read(self, path):
        return self._file[self._store.datasets[path]][...]

    def close(self):
        self._store.close()
