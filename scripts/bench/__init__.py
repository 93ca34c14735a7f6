"""Benchmark: every strategy on 60 / 1,200 / 6,000 OSDs and the plan() decision tick."""
