"""Judge clients: the OpenAI-compatible (vLLM) judge, the offline reference judge, the fallback chain."""
