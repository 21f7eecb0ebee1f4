"""Prompt templates of the CAB agents (string.Template files, ``${name}`` placeholders)."""
