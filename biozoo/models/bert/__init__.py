"""BERT family: BioBERT, PubMedBERT, Bioformer, DistilBioBERT/CompactBioBERT/TinyBioBERT, BioTinyBERT."""
