"""The package's one C extension, for sampling at gateway scale; everything else is pyproject.toml.

`_unit_hash`: the sampling rule's hash over whole blocks (`judgewatch.traffic.unit_hashes`), with OpenSSL. It
parses nothing. Optional: without a C compiler or OpenSSL's headers (Debian: gcc, libssl-dev;
`scripts/native_deps.sh`) the install goes on without it and the hashes are computed in Python, the same values,
slower.
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
    ]
)
