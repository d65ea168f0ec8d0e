"""DataLoader internals (torch/utils/data/_utils): collation, fetching, the worker loop."""
