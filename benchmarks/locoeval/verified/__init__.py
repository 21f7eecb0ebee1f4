"""The verified scripted LoCoEval-format sets and the code that builds and checks them (README.md here)."""
