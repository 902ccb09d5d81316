"""The model owner's workbench: the items behind a number, comparisons of two releases or tiers, exports."""
