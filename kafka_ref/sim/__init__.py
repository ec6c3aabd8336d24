"""A deterministic in-process cluster: the replication core driven by a simulated network
and clock (`SimCluster` in cluster.py), for labs and property tests."""

from kafka_ref.sim.cluster import SimCluster, Write

__all__ = ["SimCluster", "Write"]
