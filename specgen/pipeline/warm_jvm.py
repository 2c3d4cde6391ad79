"""`python -m specgen.pipeline.warm_jvm`: write the driver JVM's class-data archive, once per
machine and set-up (`jvm_archive.build` with a session of `spark`'s; `.ci/setup` runs it).
Later Spark sessions on a local master map it: see `jvm_archive`."""

from __future__ import annotations

from specgen.pipeline import jvm_archive
from specgen.pipeline.spark import session


def main() -> None:
    print(jvm_archive.build(session))


if __name__ == "__main__":
    main()
