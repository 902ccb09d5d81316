"""Prefect flows: post-release regression, traffic sampling, calibration."""
