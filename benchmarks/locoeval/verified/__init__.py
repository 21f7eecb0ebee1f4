"""The verified scripted LoCoEval-format sample set (samples.jsonl; see docs/locoeval.md and README.md here)."""
