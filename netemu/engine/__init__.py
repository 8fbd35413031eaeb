"""The engine: one virtual clock (asyncio on SimPy), keyed random streams, the network, actors, cohorts and the world."""
