"""Checkpoint readers, name mappings and preset writers."""
