"""Share groups (KIP-932): a topic read as a queue.

The members of a share group fetch the same partitions at once; the broker that leads a
partition hands each record to one member at a time under an acquisition lock, counts its
deliveries, and moves it to acknowledged, back to available, or to archived. This package is
that broker side: the share-partition and its state (`share_partition.py`), where the state
is kept (`persister.py`, the share coordinator and `__share_group_state`), the share group's
membership (ShareGroupHeartbeat), and the share sessions of ShareFetch and ShareAcknowledge.
"""
