"""Cluster metadata: which topics exist, how many partitions each has, who leads them.

`metadata` holds the values (topics, partitions, the errors of topic administration) and
the interface the request handlers use (`ClusterMetadataApi`). A single broker is its own
controller: `embedded` owns the metadata, persisted in the data directory (KRaft combined
mode, without ZooKeeper), and hands out the blocks of producer ids. A cluster of brokers
coordinates on ZooKeeper: `zookeeper` is Kafka's znode layout, `controller` the elected
controller, `election` and `assignment` its pure decisions, `controller_channel` its
requests to the brokers, and `zk_metadata` each broker's view of the cluster.
"""
