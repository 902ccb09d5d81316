"""OTLP traces in: `judgewatch ingest serve` receives OTLP/HTTP on /v1/traces, maps LLM spans to interactions,
samples them with the source's own rule and stores the picks in batches (docs/ingest.md)."""
