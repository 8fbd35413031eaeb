"""Simulated network: link models, node behaviour, topologies and the router."""

from netemu.engine.net.impairments import (
    Bernoulli, Constant, Empirical, Exponential, GilbertElliott, Jitter, LogNormal, NetemNormal, NetemPareto, NetemParetoNormal, RoundDelay,
    Uniform,
)
from netemu.engine.net.links import Link
from netemu.engine.net.network import Message, Network, NetworkError, NodeBehaviour
from netemu.engine.net.topology import from_graph, from_graphml, geometric, multi_server, random_peers, star

__all__ = [
    "Bernoulli", "Constant", "Empirical", "Exponential", "GilbertElliott", "Jitter", "Link", "LogNormal",
    "Message", "NetemNormal", "NetemPareto", "NetemParetoNormal", "Network", "NetworkError", "NodeBehaviour", "RoundDelay", "Uniform",
    "from_graph", "from_graphml", "geometric", "multi_server", "random_peers", "star",
]
