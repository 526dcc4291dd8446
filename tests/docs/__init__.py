"""Tests of the documentation: its code blocks run, its results tables are the records."""
