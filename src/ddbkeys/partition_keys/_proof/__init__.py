"""The proof of the marker index at answer time: a snapshot (the index) plus its log (the
stream)."""
