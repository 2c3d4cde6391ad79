"""tcpdump as a subprocess a test owns: started, known to listen, stopped by its pid.

`start(path, interface, expression)` starts `tcpdump -i INTERFACE -w - -U --immediate-mode
-s 0 -B 65536 EXPRESSION` with its output redirected into `path` and returns once tcpdump says
"listening on" (the filter is installed: a packet sent after that is captured). After the
traffic, `settle()` waits until the file stopped growing, and `stop()` (call it in a finally)
ends tcpdump with SIGINT, by its pid; `counts()` are what it said then. Why these options:

- `-w -` into a file the test opened: tcpdump started as root may drop to its own user after
  opening the interface (-Z), and then could not create a file in pytest's private folder.
- `--immediate-mode`: without it libpcap hands packets over a block at a time (TPACKET_V3,
  up to a second late), and a SIGINT then loses whatever is still in the kernel's block.
- `-U`: each packet is written out as it arrives, so the file is complete when it stops growing.
- `-B 65536`: a 64 MiB kernel buffer instead of 2 MiB. With both cores busy (CI beside two
  CPU-bound processes) tcpdump is not scheduled for a while and the default buffer overflowed:
  34 of 1,125 packets "dropped by kernel", which the tests rightly refuse.

A tcpdump that cannot capture (no root, no CAP_NET_RAW, no such interface) exits before it
listens: that is `CaptureUnavailable`, with what tcpdump said.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

LISTEN_TIMEOUT = 15.0
SETTLE = 0.5  # seconds the file must stay the same size before tcpdump is stopped
SETTLE_TIMEOUT = 10.0
STOP_TIMEOUT = 15.0


class CaptureUnavailable(RuntimeError):
    """tcpdump is missing or cannot capture here; the message says which and why."""


@dataclass
class Tcpdump:
    path: Path
    proc: subprocess.Popen[bytes]
    stderr: list[str] = field(default_factory=list)
    listening: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.stderr.append(line)
            if "listening on" in line:
                self.listening.set()

    def counts(self) -> dict[str, int]:
        """tcpdump's closing counts: captured, received by filter, dropped by kernel."""
        out = {}
        for line in self.stderr:
            m = re.match(r"(\d+) packets? (captured|received by filter|dropped by kernel)", line)
            if m:
                out[m.group(2)] = int(m.group(1))
        return out

    def settle(self) -> None:
        """Wait until the file has not grown for SETTLE seconds (tcpdump wrote what it saw)."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now = self.path.stat().st_size
            if now != size:
                size, since = now, time.monotonic()
            elif time.monotonic() - since >= SETTLE:
                return
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGINT (tcpdump then writes its counts), then SIGKILL if it does not end; by pid."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT)
        if self.reader is not None:
            self.reader.join(timeout=STOP_TIMEOUT)


def start(path: Path, interface: str, expression: str) -> Tcpdump:
    exe = shutil.which("tcpdump") or next(
        (p for p in ("/usr/sbin/tcpdump", "/usr/bin/tcpdump") if os.access(p, os.X_OK)), None
    )
    if exe is None:
        raise CaptureUnavailable("tcpdump is not installed (apt-get install tcpdump)")
    argv = [exe, "-i", interface, "-w", "-", "-U", "--immediate-mode", "-s", "0", "-B", "65536"]
    argv.append(expression)
    with path.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    dump = Tcpdump(path, proc)
    dump.reader = threading.Thread(target=dump._read_stderr, daemon=True)
    dump.reader.start()
    deadline = time.monotonic() + LISTEN_TIMEOUT
    while not dump.listening.wait(0.05):
        if proc.poll() is not None or time.monotonic() > deadline:
            dump.stop()
            said = " / ".join(line for line in dump.stderr if line) or "nothing"
            raise CaptureUnavailable(
                f"tcpdump cannot capture on {interface} (uid {os.getuid()}): it said {said}"
            )
    return dump
