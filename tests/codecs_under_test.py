"""Which codecs the tests import: the checkout's generated/ (the default: specgen.locations
makes `specgen_codecs` that folder), or with SPECGEN_TEST_COMPILED=DIR the compiled build in DIR
(`python -m specgen.compiled --out DIR`; tests/test_compiled.py runs its key tests so).

conftest.py imports this module before anything imports specgen: with the variable set it puts
DIR first on sys.path and imports `specgen_codecs` from there, which specgen.locations then
leaves as it found it; and it checks that the build is compiled, not DIR's Python copies.
"""

from __future__ import annotations

import os
import sys

COMPILED = os.environ.get("SPECGEN_TEST_COMPILED")

if COMPILED:
    sys.path.insert(0, COMPILED)
    import specgen_codecs.rabbitmq_stream.framing as _probe

    if not (_probe.__file__ or "").endswith(".so"):
        raise ImportError(f"SPECGEN_TEST_COMPILED={COMPILED}: {_probe.__file__} is not compiled")
