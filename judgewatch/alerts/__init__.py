"""Alert rules: conditions on the stored numbers, incidents sent once to webhooks and resolved (docs/operations.md)."""
