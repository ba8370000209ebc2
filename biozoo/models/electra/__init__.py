"""ELECTRA family: BioM-ELECTRA base/large discriminators and generators, BioM-BERT-Large, SQuAD2."""
