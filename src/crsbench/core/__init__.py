"""Foundations every stage shares: hashing, atomic files, timestamps, safe YAML, printable text,
vocabularies and progress. Nothing here imports another crsbench package except `errors`."""
