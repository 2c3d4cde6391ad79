"""The package layout pyproject.toml cannot state: the repository's folders go into the wheel
under other names, and the sub-packages of generated/ are found, not listed by hand.

- `generated/` installs as `specgen_codecs`, its own top-level package, so generated code never
  imports specgen at run time and nothing named `generated` lands in site-packages.
- `grammars/`, `templates/` and `specs/` install as package data under `specgen/_data/`, where
  `specgen.locations` finds them when specgen runs outside its checkout.
Everything else (metadata, dependencies, scripts) is in pyproject.toml.
"""

from setuptools import find_packages, setup

DATA = {"grammars": ["*.lark"], "templates": ["**/*.j2"], "specs": ["**/*"]}

setup(
    packages=[
        *find_packages(include=["specgen", "specgen.*"]),
        "specgen_codecs",
        *(f"specgen_codecs.{p}" for p in find_packages("generated")),
        *(f"specgen._data.{folder}" for folder in DATA),
    ],
    package_dir={
        "specgen_codecs": "generated",
        **{f"specgen._data.{folder}": folder for folder in DATA},
    },
    package_data={
        "specgen": ["py.typed", "pipeline/log4j2.properties"],
        "specgen_codecs": ["py.typed"],
        **{f"specgen._data.{folder}": globs for folder, globs in DATA.items()},
    },
)
