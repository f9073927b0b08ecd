"""A listing as tasks, and its estimate before it runs."""
