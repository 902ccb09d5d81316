"""Prometheus metrics read from the store at scrape time: the catalogue, the queries, the collector, the server."""
