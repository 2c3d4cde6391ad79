"""specgen against tshark on an AMQP 0-9-1 pcap: frames per second, counting the same frames.

    .venv/bin/python bench/tshark.py [--frames N] [--work DIR] [--keep] [--results DIR]

Users pick Wireshark's dissector to read AMQP captures today (issue 39). This script:

1. Writes an AMQP 0-9-1 capture of at least N frames (default 1,000,000) in the layout
   `specgen capture` writes, its frames marshalled by pika (an independent implementation, not
   our codec): 8 connections, each the client's protocol header, the connection and channel
   handshake, then as a producer Basic.Publish + content header + body (payloads 16 B to 4 KiB,
   properties with a headers table) answered by Basic.Ack confirms, or as a consumer
   Basic.Consume then Basic.Deliver + header + body from the server and Basic.Ack from the
   client; then turns it into the pcap tcpdump would write (bench/pcap.py's `write_pcap`,
   server port 5672, every read cut into TCP segments of at most 1448 bytes, ACKs, FINs).
2. Decodes the pcap three ways, each in a fresh process, timing the wall clock of the decode:
   - tshark: `tshark -r PCAP -n -T fields -e amqp.channel -e amqp.method.class
     -e amqp.method.method` (the dissector reassembles TCP, as it does by default, and prints a
     line per packet with every frame's fields); its frames are the `amqp.channel` values;
   - specgen, one process: packets -> byte files -> `decode_local` (what bench/pcap.py times as
     its single process);
   - specgen, Spark local[*]: `pcap_job.run` (what `specgen decode` runs on a pcap), the session
     started before the clock starts (its start-up is printed apart).
3. Checks that all three count the frames written, and specgen's runs reconcile; prints
   frames/s and each ratio to tshark with the goals beside them (issue 39: one process at least
   as fast as tshark, local[*] at least 2x) and writes bench/results/tshark.json.

The machine is shared (2 cores): only ratios measured in one run compare.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pcap as pcap_bench  # noqa: E402  (bench/pcap.py: the pcap writer)
import scale  # noqa: E402  (bench/scale.py: a connection's byte files and index)
from timing import write_results  # noqa: E402

PROTOCOL = "amqp-0-9-1"
PORT = 5672
CONNECTIONS = 8
GOAL_ONE = 1.0  # issue 39: one process at least as fast as tshark
GOAL_SPARK = 2.0  # issue 39: Spark local[*] at least 2x tshark
PAYLOADS = (16, 64, 200, 512, 1024, 4096)
WALL_START = 1_764_000_000.0


class Peer:
    """A connection's frames as its two peers send them."""

    def __init__(self, conn: scale.Connection) -> None:
        self.conn = conn
        self.frames = 0

    def send(self, direction: str, frame: bytes, alone: bool = False) -> None:
        """One frame; `alone`: in a read of its own, as a handshake's frames are (each side
        waits for the other's), so the dissector sees the protocol header alone, as it expects
        to, before any frame."""
        self.conn.send(direction, frame, "frame")
        self.frames += 1
        if alone:
            self.flush(direction)

    def flush(self, direction: str) -> None:
        """What `direction` sent since its last read, as one read."""
        conn = self.conn
        conn._read(direction, conn.written[direction] - conn.read_to[direction])


def write_capture(folder: Path, frames: int, seed: int) -> int:
    """The capture of at least `frames` AMQP 0-9-1 frames in `folder`; the frames written (the
    protocol headers are not frames)."""
    import pika.frame  # type: ignore[import-untyped]
    import pika.spec  # type: ignore[import-untyped]

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)

    def method(channel: int, m: Any) -> bytes:
        return bytes(pika.frame.Method(channel, m).marshal())

    properties = pika.spec.BasicProperties(
        content_type="application/octet-stream",
        delivery_mode=2,
        headers={"x-bench": "tshark", "x-seq": 1},
    )
    contents = {
        size: (
            bytes(pika.frame.Header(1, size, properties).marshal()),
            bytes(pika.frame.Body(1, bytes(rng.getrandbits(8) for _ in range(size))).marshal()),
        )
        for size in PAYLOADS
    }
    publish = method(1, pika.spec.Basic.Publish(exchange="bench", routing_key="tshark.bench"))
    written = 0
    for i in range(CONNECTIONS):
        conn = scale.Connection(folder, f"conn-{i + 1:04d}", True, rng, WALL_START + i * 0.75)
        quota = (frames - written) // (CONNECTIONS - i)
        peer = Peer(conn)
        send = peer.send
        conn.send("c2s", b"AMQP\x00\x00\x09\x01", "protocol header")
        peer.flush("c2s")
        start = pika.spec.Connection.Start(server_properties={"product": "bench"})
        send("s2c", method(0, start), alone=True)
        ok = pika.spec.Connection.StartOk({"product": "bench"}, "PLAIN", "\0guest\0guest")
        send("c2s", method(0, ok), alone=True)
        send("s2c", method(0, pika.spec.Connection.Tune(2047, 131072, 60)), alone=True)
        send("c2s", method(0, pika.spec.Connection.TuneOk(2047, 131072, 60)))
        send("c2s", method(0, pika.spec.Connection.Open("/")), alone=True)
        send("s2c", method(0, pika.spec.Connection.OpenOk()), alone=True)
        send("c2s", method(1, pika.spec.Channel.Open()), alone=True)
        send("s2c", method(1, pika.spec.Channel.OpenOk()), alone=True)
        tag = 0
        if i % 2 == 0:  # a producer with confirms
            send("c2s", method(1, pika.spec.Confirm.Select()))
            send("s2c", method(1, pika.spec.Confirm.SelectOk()))
            while peer.frames < quota:
                header, body = contents[rng.choice(PAYLOADS)]
                send("c2s", publish)
                send("c2s", header)
                send("c2s", body)
                tag += 1
                if tag % 10 == 0:
                    send("s2c", method(1, pika.spec.Basic.Ack(delivery_tag=tag, multiple=True)))
        else:  # a consumer acknowledging every tenth delivery
            send("c2s", method(1, pika.spec.Basic.Consume(queue="q", consumer_tag="ctag-1")))
            send("s2c", method(1, pika.spec.Basic.ConsumeOk(consumer_tag="ctag-1")))
            while peer.frames < quota:
                header, body = contents[rng.choice(PAYLOADS)]
                tag += 1
                deliver = pika.spec.Basic.Deliver("ctag-1", tag, False, "bench", "tshark.bench")
                send("s2c", method(1, deliver))
                send("s2c", header)
                send("s2c", body)
                if tag % 10 == 0:
                    send("c2s", method(1, pika.spec.Basic.Ack(delivery_tag=tag, multiple=True)))
        conn.close()
        written += peer.frames
    return written


def run_tshark(pcap: Path) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run(
        [
            "tshark",
            "-r",
            str(pcap),
            "-n",
            "-T",
            "fields",
            "-e",
            "amqp.channel",
            "-e",
            "amqp.method.class",
            "-e",
            "amqp.method.method",
        ],  # fmt: skip
        capture_output=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    frames = methods = 0
    for line in proc.stdout.splitlines():
        channels, classes, _ = line.split(b"\t")
        frames += channels.count(b",") + 1 if channels else 0
        methods += classes.count(b",") + 1 if classes else 0
    return {"seconds": seconds, "frames": frames, "methods": methods}


def run_single(pcap: Path, out: Path) -> dict[str, Any]:
    from specgen.pipeline import decode

    streams = out / "streams" / pcap.name
    streams.mkdir(parents=True)
    started = time.perf_counter()
    counts = pcap_bench.write_streams(pcap, streams, frozenset({PORT}))
    decoded = decode.decode_local(
        PROTOCOL, out / "streams", out, overwrite=True, echo=lambda _: None
    )
    seconds = time.perf_counter() - started
    ok = sum(t.total for t in decoded.files) == counts["payload"] - counts["duplicates"]
    return {
        "seconds": seconds,
        "frames": decoded.frames,
        "rejects": decoded.rejects,
        "reconciled": decoded.reconciled and ok,
    }


def run_spark(pcap: Path, out: Path) -> dict[str, Any]:
    from specgen.pipeline import pcap_job
    from specgen.pipeline.spark import session

    started = time.perf_counter()
    spark = session("local[*]")
    start_s = time.perf_counter() - started
    files = pcap_job.find(pcap)
    started = time.perf_counter()
    result = pcap_job.run(
        PROTOCOL, files, out, "local[*]", True, frozenset({PORT}), echo=lambda _: None
    )
    seconds = time.perf_counter() - started
    spark.stop()
    return {
        "seconds": seconds,
        "start_s": start_s,
        "cores": os.cpu_count(),
        "frames": result.frames,
        "rejects": result.rejects,
        "reconciled": result.reconciled,
    }


def child(mode: str, pcap: Path, out: Path, report: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    data = run_single(pcap, out) if mode == "single" else run_spark(pcap, out)
    report.write_text(json.dumps(data))


def in_child(mode: str, pcap: Path, work: Path) -> dict[str, Any]:
    report = work / f"{mode}.json"
    subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            str(pcap),
            str(work / f"out-{mode}"),
            str(report),
        ],
        check=True,
    )
    data: dict[str, Any] = json.loads(report.read_text())
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--results", type=Path, help="write DIR/tshark.json, not bench/results/")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, pcap, out, report = args.child
        child(mode, Path(pcap), Path(out), Path(report))
        return 0
    if shutil.which("tshark") is None:
        print("tshark is not installed (Debian: apt-get install tshark)", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="specgen-tshark-"))
    try:
        capture = work / "capture"
        shutil.rmtree(capture, ignore_errors=True)
        t0 = time.perf_counter()
        frames = write_capture(capture, args.frames, seed=39)
        pcap = work / "amqp091.pcap"
        written = pcap_bench.write_pcap(capture, pcap, seed=39, port=PORT)
        print(
            f"wrote {frames:,} AMQP 0-9-1 frames in {CONNECTIONS} connections: "
            f"{written.packets:,} packets, {pcap.stat().st_size:,} bytes of pcap "
            f"({time.perf_counter() - t0:.1f} s)"
        )
        tshark = run_tshark(pcap)
        single = in_child("single", pcap, work)
        spark = in_child("spark", pcap, work)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    problems = []
    for name, run in (("tshark", tshark), ("single", single), ("spark", spark)):
        if run["frames"] != frames:
            problems.append(f"{name} counted {run['frames']:,} frames, {frames:,} were written")
        if name != "tshark" and not (run["reconciled"] and run["rejects"] == 0):
            problems.append(f"{name}: {run['rejects']} rejects, reconciled {run['reconciled']}")
    rate = {
        n: r["frames"] / r["seconds"]
        for n, r in (("tshark", tshark), ("single", single), ("spark", spark))
    }
    rows = [
        {"run": "tshark -T fields", "frames": tshark["frames"], "seconds": round(tshark["seconds"], 2),
         "frames_per_s": round(rate["tshark"]), "ratio": 1.0, "goal": None},
        {"run": "specgen, one process", "frames": single["frames"], "seconds": round(single["seconds"], 2),
         "frames_per_s": round(rate["single"]), "ratio": round(rate["single"] / rate["tshark"], 2), "goal": GOAL_ONE},
        {"run": "specgen, Spark local[*]", "frames": spark["frames"], "seconds": round(spark["seconds"], 2),
         "frames_per_s": round(rate["spark"]), "ratio": round(rate["spark"] / rate["tshark"], 2), "goal": GOAL_SPARK},
    ]  # fmt: skip
    print(f"{'run':<26}{'frames':>12}{'seconds':>10}{'frames/s':>12}  vs tshark")
    for row in rows:
        goal = row["goal"]
        against = f"{row['ratio']:.2f}x" + (
            f" (goal >= {goal}x {'met' if row['ratio'] >= goal else 'NOT met'})" if goal else ""
        )
        print(
            f"{row['run']:<26}{row['frames']:>12,}{row['seconds']:>10.2f}"
            f"{row['frames_per_s']:>12,}  {against}"
        )
    print(f"Spark session start-up (not timed above): {spark['start_s']:.1f} s")
    for problem in problems:
        print(f"WRONG: {problem}", file=sys.stderr)
    path = write_results("tshark", rows, args.results)
    print(f"results: {path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
