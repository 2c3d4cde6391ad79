"""The package layout pyproject.toml cannot state: the repository's folders go into the wheel
under other names, and the sub-packages of generated/ are found, not listed by hand.

- `generated/` installs as `specgen_codecs`, its own top-level package, so generated code never
  imports specgen at run time and nothing named `generated` lands in site-packages.
- `grammars/`, `templates/` and `specs/` install as package data under `specgen/_data/`, where
  `specgen.locations` finds them when specgen runs outside its checkout. Their sub-folders are
  listed as (namespace) packages too: setuptools warns about data folders it was not told of.
Everything else (metadata, dependencies, scripts) is in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

DATA = {"grammars": ["*.lark"], "templates": ["*.j2"], "specs": ["*"]}


def data_packages(folder: str) -> list[str]:
    return [f"specgen._data.{folder}"] + [
        f"specgen._data.{folder}.{sub}" for sub in find_namespace_packages(folder)
    ]


setup(
    packages=[
        *find_packages(include=["specgen", "specgen.*"]),
        "specgen_codecs",
        *(f"specgen_codecs.{p}" for p in find_packages("generated")),
        *(p for folder in DATA for p in data_packages(folder)),
    ],
    package_dir={
        "specgen_codecs": "generated",
        **{f"specgen._data.{folder}": folder for folder in DATA},
    },
    package_data={
        "specgen": ["py.typed", "pipeline/log4j2.properties"],
        # the formatting manifest: a generate whose output is a shipped codec takes the
        # installed file instead of running black (specgen.format_cache)
        "specgen_codecs": ["py.typed", ".format-manifest.json"],
        **{p: DATA[folder] for folder in DATA for p in data_packages(folder)},
    },
)
