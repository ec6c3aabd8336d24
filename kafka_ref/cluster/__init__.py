"""Cluster metadata: which topics exist, how many partitions each has, who leads them.

`metadata` holds the values (topics, partitions, the errors of topic administration) and
the rules every Kafka broker applies to them (legal topic names); `embedded` is the
single-broker controller that owns them, persisted in the data directory (KRaft combined
mode, without ZooKeeper); it also hands out the blocks of producer ids. Multi-broker
clusters on ZooKeeper come later.
"""
