"""A table's exports to S3 (ExportTableToPointInTime) as snapshots: reading their files, and
starting one (not public: :mod:`ddbkeys.partition_keys` gives out what users call)."""
