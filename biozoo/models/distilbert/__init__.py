"""DistilBERT family: BioDistilBERT cased and uncased."""
