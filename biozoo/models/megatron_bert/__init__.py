"""Megatron-BERT family: BioMegatron 345m cased and uncased."""
