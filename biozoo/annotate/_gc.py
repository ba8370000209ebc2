"""Python's cyclic garbage collector paused while a chunk of documents is annotated.

A chunk allocates a million small lists and tuples (token spans, windows, entities) that stay
alive until the chunk is done and are freed by reference counting. Meanwhile each allocation
threshold starts a collection that walks them all, and every long-lived object of the process
(the model, the tokenizer) with them. A tagger's host stages (sentences to entities, 1,000 BC5CDR
abstracts, this project's 2-core machine) took 2.65 ms an abstract with the collector running and
1.66 ms with it paused.

Between chunks (reading documents, the traffic to worker processes) the collector runs, and a
full collection walks every object the process holds: the libraries imported, the model, the
documents in flight. `heap_frozen` leaves what existed when a run started out of those walks:
12,000 abstracts through 2 workers on this project's CPU (the script holding them all as well)
spent 10.8 s of 86 s in 11 full collections, and 0.9 s in 8 with the heap frozen.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collection_paused():
    """The collector off within the block (as it was after it): cycles made meanwhile are found
    by the next collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def heap_frozen():
    """Every object alive now out of the collector's walks within the block (`gc.freeze`), and
    back in them after; nothing is changed when something froze the heap already."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
