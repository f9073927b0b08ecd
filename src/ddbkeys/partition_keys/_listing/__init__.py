"""Listing methods: the segment methods, their reader, checkpoints and progress."""
