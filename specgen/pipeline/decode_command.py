"""`specgen decode`'s entry: checks the options, tells pcap input from capture folders, runs
the job that reads it (`pcap_job`, else `decode`) and turns its result into the exit status.

It sits above both jobs: the pcap job ends in the ordinary decode, so neither may import this.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from specgen.pipeline import decode, pcap_job, unfinished
from specgen.pipeline.decode import DecodeJobError, run
from specgen.pipeline.inputs import DecodeInputError
from specgen.pipeline.ranges import TARGET

MASTER_URL = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


def main(
    protocol: str,
    input_dir: Path,
    out: Path,
    master: str | None,
    overwrite: bool,
    target: int = TARGET,
    verify_checksums: bool = True,
    max_rejects: int | None = None,
    ports: frozenset[int] = frozenset(),
) -> int:
    """The CLI's `decode`: 0 when every frame found is accounted for (and the rejects table
    holds at most `max_rejects` rows, when given), 1 otherwise or when Spark fails; input errors
    raise DecodeInputError, which the CLI prints as one line (exit 2), and a Spark that
    cannot start or a master that cannot be reached are exit 2 too. An input of pcap or
    pcapng files (told by their magic numbers) goes through `pcap_job` first."""
    from specgen.pipeline.spark import MasterUnreachable, Unavailable, check_master

    if target < 1:
        raise DecodeInputError(f"--range-size {target}: must be a positive number of bytes")
    if max_rejects is not None and max_rejects < 0:
        raise DecodeInputError(f"--max-rejects {max_rejects}: must be 0 or more")
    if master is not None and not MASTER_URL.fullmatch(master):
        # caught here: a bad URL would otherwise end in a JVM stack trace from spark-submit
        raise DecodeInputError(
            f"--master {master}: not a Spark master URL "
            "(local[*], local[N], spark://HOST:PORT, yarn, k8s://HOST:PORT)"
        )
    # the protocol first: a name nobody knows, or a version with no decoder, is refused before
    # a single file of the input is looked at (a large folder takes seconds to walk)
    decode.check_protocol(protocol)
    try:
        if master is not None:
            check_master(master)  # before walking the captures, which can take minutes
        pcaps = pcap_job.find(input_dir)
        if pcaps:
            if input_dir.is_dir() and any(input_dir.rglob("*.c2s.bin")):
                raise DecodeInputError(
                    f"{input_dir}: holds both pcap files and capture folders; decode them apart"
                )
            result = pcap_job.run(
                protocol,
                pcaps,
                out,
                master,
                overwrite,
                ports,
                target=target,
                verify_checksums=verify_checksums,
            )
        else:
            if ports:
                raise DecodeInputError("--port is for pcap input; a capture folder has no ports")
            result = run(
                protocol,
                input_dir,
                out,
                master,
                overwrite,
                target,
                verify_checksums=verify_checksums,
            )
    except DecodeJobError as e:
        left = f"; {out} is marked unfinished ({unfinished.MARK})" if unfinished.why(out) else ""
        print(f"specgen: decode failed: {e}{left}", file=sys.stderr, flush=True)
        return 1
    except (MasterUnreachable, Unavailable) as e:
        # an environment error, as `report` and the top-level help say: exit 2
        print(f"specgen: {e}", file=sys.stderr, flush=True)
        return 2
    if max_rejects is not None and result.rejects > max_rejects:
        # the tables stay: they are the evidence of what did not decode
        sys.stdout.flush()  # so that this is the last line on a terminal
        print(
            f"specgen: decode failed: {result.rejects:,} "
            f"reject{'' if result.rejects == 1 else 's'}, more than --max-rejects "
            f"{max_rejects:,}; the tables are in {out}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0 if result.reconciled else 1
