"""What a scenario reads from disk, bounded: the scenario file itself, a GraphML topology,
empirical latency samples and the devices file (relative to the scenario); a FIFO, a device
or an oversized file is refused before anything reads it."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from netemu.engine.net import links as L
from netemu.engine.net.heterogeneity import EmpiricalSpeed, read_speeds
from netemu.scenario.limits import MAX_DEPTH, MAX_NODES
from netemu.scenario.overrides import too_many_digits
from netemu.scenario.schema import Issue, Issues, ScenarioError

__all__ = ["MAX_DATA_FILE_BYTES", "MAX_GRAPHML_BYTES", "MAX_SCENARIO_BYTES", "check_code", "check_files", "graphml_size_ok",
           "read_toml", "regular_file"]

MAX_SCENARIO_BYTES = 50_000_000
MAX_GRAPHML_BYTES = 200_000_000
MAX_DATA_FILE_BYTES = 1_000_000_000  # latency samples and devices files


def regular_file(path: Path, limit: int) -> None:
    """Refuse what is not a regular file of at most `limit` bytes (a FIFO, /dev/zero or a
    socket would block or never end) before anything reads it.  Missing files pass:
    their readers report them."""
    import stat

    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path}: not a regular file (a device, FIFO or socket)")
    if st.st_size > limit:
        raise OSError(f"{path}: {st.st_size:,} bytes, more than the {limit:,} accepted")


def link_tables(table: dict) -> list[tuple[str, dict]]:
    shared = [(f"topology.{k}", t) for k, t in table["topology"].items() if k in ("server_link", "access_points") and isinstance(t, dict)]
    shared += [(f"topology.access_points[{i}]", g) for i, g in enumerate(table["topology"].get("access_points") or []) if isinstance(g, dict)]
    return shared + [(f"links.{c}", t) for c, t in table["links"].items()] + [(f"link[{i}]", t) for i, t in enumerate(table["link"])]


def graphml_size_ok(table: dict, resolve: Callable[[str], Path], issues: Issues) -> bool:
    topo = table["topology"]
    if topo["kind"] != "graphml":
        return True
    try:
        regular_file(resolve(topo["file"]), MAX_GRAPHML_BYTES)
        nodes = graphml_nodes(resolve(topo["file"]), MAX_NODES + 1)
    except OSError as exc:
        issues.add("topology.file", topo["file"], f"a GraphML file: {exc}")
        return False
    except ValueError:  # not XML: the GraphML reader says so, as for any malformed file
        return True
    if nodes > MAX_NODES:
        issues.add("topology.file", topo["file"], f"a GraphML topology of at most {MAX_NODES:,} nodes, as for every topology "
                   f"(this file has more than {MAX_NODES:,} <node> elements)")
        return False
    return True


def graphml_nodes(path: Path, stop: int) -> int:
    """The number of <node> elements of a GraphML file, counted while it streams (expat, 1 MiB at
    a time, no tree kept), up to `stop`: a file of millions of nodes is refused before networkx
    builds them.  ValueError if the file is not well-formed XML."""
    from xml.parsers import expat

    count = 0

    class _Enough(Exception):
        pass

    def start(name: str, _attrs: object) -> None:
        nonlocal count
        if name == "node" or name.endswith(" node"):
            count += 1
            if count >= stop:
                raise _Enough

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.StartElementHandler = start
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
    except _Enough:
        pass
    except expat.ExpatError as exc:
        raise ValueError(f"not well-formed XML ({exc})") from None
    return count


def check_files(table: dict, resolve: Callable[[str], Path], issues: Issues) -> None:
    """The files a scenario names (relative to it): empirical latency samples and speeds, and the devices
    file are read and checked now; a data source and a script must exist."""
    for where, link in link_tables(table):
        latency = link.get("latency") or {}
        if latency.get("model") == "empirical" and "file" in latency:
            try:
                regular_file(resolve(latency["file"]), MAX_DATA_FILE_BYTES)
                L.Empirical.from_file(resolve(latency["file"]))
            except (OSError, ValueError) as exc:
                issues.add(f"{where}.latency.file", latency["file"], f"a readable file of delays (one per line): {exc}")
    nodes = table["nodes"]
    for where, t in [("nodes", nodes), *((f"nodes.group[{i}]", g) for i, g in enumerate(nodes["group"]))]:
        speed = t.get("speed")
        if isinstance(speed, dict) and speed.get("model") == "empirical" and "file" in speed:
            try:
                regular_file(resolve(speed["file"]), MAX_DATA_FILE_BYTES)
                EmpiricalSpeed(read_speeds(resolve(speed["file"])))
            except (OSError, ValueError) as exc:
                issues.add(f"{where}.speed.file", speed["file"], f"a readable file of speeds > 0 (one per line): {exc}")
    if table["devices"]["file"]:
        from netemu.devices import DeviceError, read_devices

        try:
            regular_file(resolve(table["devices"]["file"]), MAX_DATA_FILE_BYTES)
            read_devices(resolve(table["devices"]["file"]))
        except (DeviceError, OSError) as exc:
            issues.add("devices.file", table["devices"]["file"], str(exc))
    source = (table["data"] or {}).get("source", "sklearn")
    if isinstance(source, str) and source not in ("sklearn", "synthetic"):  # read from its headers only, nothing decoded
        from netemu.data.files import DataError, check_source

        try:
            check_source(resolve(source))
        except DataError as exc:
            issues.add("data.source", source, f'"sklearn" ("synthetic" for kind = "classification"), or an existing .npz file or folder of MNIST IDX files '
                       f"(relative to the scenario) that can be read: {exc}")
    if table["script"] and not resolve(table["script"]).is_file():
        issues.add("script", table["script"], "an existing Python file (relative to the scenario)")


def check_code(code: list[tuple[str, Path]], issues: Issues) -> None:
    """The Python code a run executes and `netemu validate` hashes (`Scenario.code`: a script, a
    Flower app_dir): each an existing regular file or folder — a FIFO would block the hash forever."""
    import os
    import stat

    for key, path in code:
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            issues.add(key, str(path), f"an existing file or folder of Python code (relative to the scenario): {exc.strerror}")
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            issues.add(key, str(path), "a file or folder of Python code, not a device, FIFO or socket")


#: a dotted key (table header or key) of more than MAX_DEPTH parts: tomllib's time grows with the
#: square of a key's parts (100,000 parts take seconds), so such a file is refused before it is parsed
_DEEP_KEY = re.compile(r"(?:^[ \t]*\[{0,2}|[{,])[ \t]*"
                       r"""(?:(?:[A-Za-z0-9_-]++|"[^"\n]*+"|'[^'\n]*+')[ \t]*+\.[ \t]*+)""" + f"{{{MAX_DEPTH}}}", re.M)


def read_toml(path: Path) -> dict:
    """The TOML table of a scenario file, or a ScenarioError naming what is wrong with the file."""
    try:
        if path.is_dir():
            raise ScenarioError([Issue(str(path), "(file)", "a directory", "a scenario TOML file")])
        regular_file(path, MAX_SCENARIO_BYTES)
        text = path.read_bytes().decode("utf-8")
        if _DEEP_KEY.search(text):
            raise RecursionError
        return tomllib.loads(text)
    except ScenarioError:  # a ValueError too: not the tomllib ValueError below
        raise
    except RecursionError:
        raise ScenarioError([Issue(str(path), "(syntax)", "(nesting)", f"TOML nested at most {MAX_DEPTH} levels deep")]) from None
    except FileNotFoundError:
        raise ScenarioError([Issue(str(path), "(file)", str(path), "an existing scenario file")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError([Issue(str(path), "(encoding)", f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}",
                                   "a UTF-8 text file (TOML)")]) from None
    except OSError as exc:
        raise ScenarioError([Issue(str(path), "(file)", str(path), f"a readable scenario file ({exc.strerror or exc})")]) from None
    except MemoryError:
        raise ScenarioError([Issue(str(path), "(file)", str(path), "a scenario file that fits in memory")]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError([Issue(str(path), "(syntax)", str(exc), "valid TOML")]) from None
    except ValueError:  # tomllib's int() of more digits than sys.get_int_max_str_digits (not a TOMLDecodeError)
        raise ScenarioError([Issue(str(path), "(syntax)", _longest_integer(path), f"valid TOML with {too_many_digits()}")]) from None


def _longest_integer(path: Path) -> str:
    """Where the integer Python refused to convert is: its length and line."""
    import re

    text = path.read_bytes().decode("utf-8", errors="replace")
    m = max(re.finditer(r"[0-9_]+", text), key=lambda m: len(m.group()), default=None)
    if m is None:
        return "an integer too long to convert"
    return f"an integer of {len(m.group()):,} digits at line {text.count(chr(10), 0, m.start()) + 1}"
