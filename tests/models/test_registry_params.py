"""For every registry entry, the architecture built from the registry config alone has
exactly the parameters of transformers' AutoModel (no task head) for the same config."""

import pytest

import biozoo
from biozoo import registry
from biozoo.models import get_family
from biozoo.models.family import never


def transformers_count(entry):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(**entry["config"])
    # a family that never has a pooler (ELECTRA, DistilBERT) takes no add_pooling_layer
    kwargs = {} if get_family(entry["family"]).use_pooler is never else {"add_pooling_layer": entry["pooler"]}
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(config, **kwargs)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.slow
@pytest.mark.parametrize("name", registry.list_presets())
def test_parameter_count_equals_transformers(name):
    import keras

    entry = registry.get_entry(name)
    # Variables created in a stateless scope keep their shapes and are never initialized: the count
    # needs no values, and drawing BioMegatron's 334M random numbers took 7 of its 7.5 s. Keras lists
    # them for the next scope that does initialize (in a later test: 90-150 s for all 38 presets), so
    # the session is cleared; without a garbage collection, which took seconds late in a worker's life.
    try:
        with keras.StatelessScope(initialize_variables=False):
            backbone = biozoo.from_preset(name, load_weights=False)
        count = backbone.count_params()
    finally:
        keras.backend.clear_session(free_memory=False)
    assert count == transformers_count(entry)
    assert count == entry["parameters"]
    assert ("pooled_output" in backbone.output) == entry["pooler"]
