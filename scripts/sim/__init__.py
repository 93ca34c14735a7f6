"""Simulator of controlled OSD starts on model clusters (see docs/memory-model.md)."""
