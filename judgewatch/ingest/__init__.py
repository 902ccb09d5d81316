"""OTLP traces in: `judgewatch ingest serve` receives OTLP/HTTP on /v1/traces, maps LLM spans to interactions
(`judgewatch.traffic.otel_source`), samples them with the source's own rule and stores the picks in batches.

`picks` is how a sampled pick is stored (shared with the sampling flows), `store` the batched writer, `server`
the ASGI app. See docs/ingest.md.
"""
