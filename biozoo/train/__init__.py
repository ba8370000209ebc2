"""Optimisers, schedules, strategies and the fine-tuning / pretraining drivers."""
