"""The performance benches behind ``python -m scripts.bench {llm,prefill,index,recall,methods,workers,retrieval}``,
one module per bench (the scripts parse the command line and call them)."""
