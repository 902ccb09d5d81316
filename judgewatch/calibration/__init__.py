"""Calibration and tier comparison on stored verdicts and human labels: ARCHITECTURE.md says which module computes
each number of the Tiers page."""
