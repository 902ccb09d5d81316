"""The package's two C extensions, for sampling at gateway scale; everything else is pyproject.toml.

- `_unit_hash`: the sampling rule's hash over whole blocks (`judgewatch.traffic.unit_hashes`), with OpenSSL.
- `_line_scan`: the JSONL line scanner that reads only the mapping's fields (`judgewatch.traffic.line_scan`).

Both are optional: without a C compiler or OpenSSL's headers (Debian: gcc, libssl-dev; `scripts/native_deps.sh`)
the install goes on without them, the hashes are computed in Python and JSONL blocks are parsed by pyarrow, with
the same results, slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "judgewatch.traffic._unit_hash",
            sources=["judgewatch/traffic/_unit_hash.c"],
            libraries=["crypto"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
        Extension(
            "judgewatch.traffic._line_scan",
            sources=["judgewatch/traffic/_line_scan.c"],
            extra_compile_args=["-O3"],
            optional=True,
        ),
    ]
)
