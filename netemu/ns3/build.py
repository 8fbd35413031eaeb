"""Building the ns-3 side of netemu's packet-level engine: `engine.cc`, compiled on first use.

The program (`engine.cc` and the parts it includes, `SOURCES`) is compiled with g++ against the system's ns-3 (Debian's ``libns3-dev``, found by
pkg-config) into ``$XDG_CACHE_HOME/netemu/ns3/<ns-3 version>-<source hash>/engine`` (default
``~/.cache/netemu``; ``NETEMU_NS3_CACHE`` overrides the directory), so a new ns-3 or a changed
source builds again and an unchanged one never does.  The build goes to a temporary file renamed
into place, so two runs building at once both end with a whole binary.

Missing ns-3, pkg-config or g++ is an `Ns3Missing` (exit code 2) that says what to install.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from netemu.errors import InputError

__all__ = ["INSTALL", "MODULES", "Ns3Missing", "SOURCE", "SOURCES", "binary", "ns3_version"]

SOURCE = Path(__file__).with_name("engine.cc")
#: every file of the program: engine.cc and the parts it includes (one translation unit), all in the cache key
SOURCES = (SOURCE, *(SOURCE.with_name(name) for name in ("state.h", "tcp.h", "udp.h", "links.h")))
#: the ns-3 libraries the engine links
MODULES = ("ns3-core", "ns3-network", "ns3-internet", "ns3-point-to-point", "ns3-applications", "ns3-traffic-control")
INSTALL = "apt-get install -y libns3-dev g++ pkg-config"


class Ns3Missing(InputError):
    """ns-3 or a compiler is not installed: `engine = "ns3"` cannot run here."""


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def ns3_version() -> str:
    """The installed ns-3's version (pkg-config's), or `Ns3Missing`."""
    if shutil.which("pkg-config") is None:
        raise Ns3Missing(f'[network] engine = "ns3" needs pkg-config, g++ and ns-3; install them with: {INSTALL}')
    got = _run(["pkg-config", "--modversion", "ns3-core"])
    if got.returncode != 0 or not got.stdout.strip():
        raise Ns3Missing(f'[network] engine = "ns3" needs ns-3 (pkg-config finds no ns3-core); install it with: {INSTALL}')
    return got.stdout.strip()


def _libs() -> list[str]:
    """The link flags pkg-config gives, without the absolute library paths that do not exist: Debian's
    3.37 .pc files name libgsl.so etc., which only the -dev packages ship (the ns-3 libraries link them),
    and carry a broken Cflags (``-I/usr;``) that is not used: the headers are in /usr/include/ns3."""
    got = _run(["pkg-config", "--libs", *MODULES])
    if got.returncode != 0:
        raise Ns3Missing(f"pkg-config does not find the ns-3 modules {', '.join(MODULES)} ({got.stderr.strip()}); install: {INSTALL}")
    out: list[str] = []
    for flag in got.stdout.split():
        if flag.startswith("/") and not os.path.exists(flag):
            continue
        if flag not in out:
            out.append(flag)
    return out


def cache_dir() -> Path:
    root = os.environ.get("NETEMU_NS3_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netemu" / "ns3"


def binary() -> Path:
    """The compiled engine for the installed ns-3 and this source, built if it is not cached yet."""
    version = ns3_version()
    h = hashlib.blake2b(digest_size=8)
    for part in SOURCES:
        h.update(part.name.encode() + b"\0" + part.read_bytes() + b"\0")
    digest = h.hexdigest()
    target = cache_dir() / f"{version}-{digest}" / "engine"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    compiler = shutil.which("g++")
    if compiler is None:
        raise Ns3Missing(f'[network] engine = "ns3" builds its ns-3 program with g++, which is not installed; install it with: {INSTALL}')
    libs = _libs()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="engine-", dir=target.parent)
    os.close(fd)
    try:
        got = _run([compiler, "-std=c++17", "-O2", "-w", "-o", tmp, str(SOURCE), *libs])
        if got.returncode != 0:
            raise Ns3Missing(f"building {SOURCE} against ns-3 {version} failed (g++ exit {got.returncode}):\n{got.stderr[-3000:]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
