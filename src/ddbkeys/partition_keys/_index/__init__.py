"""The marker index: its items, its backfill, repair and reconciliation, and the state table."""
