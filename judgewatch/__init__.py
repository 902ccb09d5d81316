"""judgewatch: continuous quality evaluation for LLM applications."""

__version__ = "0.5.0"
