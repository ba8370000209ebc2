"""MobileBERT family: BioMobileBERT."""
