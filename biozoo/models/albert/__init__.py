"""ALBERT family: BioM-ALBERT-xxlarge, -PMC and the SQuAD2 fine-tune."""
