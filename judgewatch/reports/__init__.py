"""Reports: regression gate reports (Markdown and JSON)."""
