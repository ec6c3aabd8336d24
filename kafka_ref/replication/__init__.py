"""Replication: leader and followers, the high watermark, the ISR, leader epochs, truncation.

The pure core of a replicated partition, with thin adapters around it: no sockets,
no threads, no clock reads but the injected one. The simulator (`kafka_ref/sim/`) and the
broker drive it with the message values of `messages.py`.

    leader_epoch.py  the leader epoch cache, `leader-epoch-checkpoint` (Kafka LeaderEpochFileCache)
    replica.py       a follower as its leader sees it (Kafka Replica)
    partition.py     one replica as leader or follower: HW, ISR, acks=all (Kafka Partition)
    truncation.py    the two follower truncation rules (high-watermark, leader-epoch)
    fetcher.py       a follower's fetch loop as a state machine (Kafka AbstractFetcherThread)
    messages.py      LeaderAndIsr, Fetch, OffsetsForLeaderEpoch, AlterIsr as values
"""
