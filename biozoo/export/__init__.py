"""Exporters: HuggingFace directories, TF Hub-style SavedModels, Model Garden checkpoints."""
