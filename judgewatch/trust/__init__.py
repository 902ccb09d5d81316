"""Judge trust: measure every judge on known answers, bias probes and human labels before a gate may rest on it
(ARCHITECTURE.md names the modules; import from them directly)."""
