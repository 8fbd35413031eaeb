"""ns-3 as netemu's packet-level network engine (``[network] engine = "ns3"``).

The same scenario runs on netemu's flow model, for 10^5 clients, or on ns-3 3.37 (Debian's
``libns3-dev``), for the packet-level truth at tens to hundreds of nodes: every message a TCP
transfer in ns-3, in lockstep with the virtual clock.  The modules, in the order they depend on
each other:

- `netemu.ns3.build`: the C++ side (`engine.cc`, shipped with netemu) compiled on first use into a
  cache keyed by ns-3's version and the source's hash; missing ns-3 or g++ is exit code 2;
- `netemu.ns3.topology`: nodes, links, queues, losses, outages and TCP settings as ns-3 setup lines,
  refusing what ns-3's point-to-point links cannot express;
- `netemu.ns3.process`: the engine process and its line protocol; a crash stops the run;
- `netemu.ns3.changes`: what a script changes in links and nodes during the run, as commands;
- `netemu.ns3.engine`: `Ns3Engine`, the general message path of a `Network` under ns-3, and the
  conservative lockstep with the clock.

Why the Debian package and not ns-3's Python wheel (3.44): the wheel builds cppyy from source, tens
of minutes on a first install, and drives ns-3 through Python callbacks per event; a small C++
program against ``libns3-dev`` compiles in ~15 s, once, and keeps ns-3's event loop in C++ — netemu
talks to it only at the instants where either side has something to say.
"""

from __future__ import annotations

from netemu.ns3.build import Ns3Missing
from netemu.ns3.changes import Ns3Refused
from netemu.ns3.process import Ns3Crashed
from netemu.ns3.topology import Ns3Unsupported

__all__ = ["Ns3Crashed", "Ns3Missing", "Ns3Refused", "Ns3Unsupported"]
