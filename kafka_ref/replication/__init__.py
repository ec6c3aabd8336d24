"""Replication: leader and followers, the high watermark, the ISR, leader epochs, truncation.

The pure core of a replicated partition, with thin adapters around it: no sockets,
no threads, no clock reads but the injected one. The broker's replica manager and
follower fetcher (`kafka_ref/server/`) drive it with the message values of `messages.py`,
in the broker and in the simulator (`kafka_ref/sim/`).

    leader_epoch.py          the leader epoch cache, `leader-epoch-checkpoint`
                             (Kafka LeaderEpochFileCache)
    replica.py               a follower as its leader sees it (Kafka Replica)
    isr.py                   who joins the ISR and who leaves it
    partition.py             one replica as leader or follower: HW, ISR, acks=all
                             (Kafka Partition)
    truncation.py            the two follower truncation rules (high-watermark, leader-epoch)
    follower_fetch_state.py  a follower's fetch loop for one partition, as a state machine
                             (Kafka PartitionFetchState of AbstractFetcherThread)
    messages.py              LeaderAndIsr, Fetch, OffsetsForLeaderEpoch, AlterIsr as values
"""
