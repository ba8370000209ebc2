"""Model families. Each folder holds a backbone, a tokenizer class and converter mappings."""

from biozoo.errors import CheckpointError
from biozoo.models import albert, bert, distilbert, electra, megatron_bert, mobilebert

_MODULES = (bert, albert, electra, distilbert, mobilebert, megatron_bert)
FAMILIES = {module.FAMILY.name: module.FAMILY for module in _MODULES}


def get_family(name):
    if name not in FAMILIES:
        raise CheckpointError(f"Unknown family '{name}'. Known families: {', '.join(sorted(FAMILIES))}.")
    return FAMILIES[name]


def family_for_model_type(model_type, source="config.json"):
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    known = sorted(t for f in FAMILIES.values() for t in f.model_types)
    raise CheckpointError(
        f"{source}: model_type '{model_type}' is not a family biozoo supports ({', '.join(known)})."
    )


def family_for_backbone(backbone):
    for family in FAMILIES.values():
        if isinstance(backbone, family.backbone_cls):
            return family
    raise CheckpointError(f"{type(backbone).__name__} is not a biozoo backbone.")
