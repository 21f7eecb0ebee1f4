"""Demo samples shipped in the package (samples.jsonl; see docs/locoeval.md)."""
