"""The package's one C extension, the sampling rule's hash over whole blocks; everything else is pyproject.toml.

Optional: without a C compiler or OpenSSL's headers (Debian: gcc, libssl-dev; `scripts/native_deps.sh`) the
install goes on without it and `judgewatch.traffic.unit_hashes` computes the same values in Python.
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
        )
    ]
)
