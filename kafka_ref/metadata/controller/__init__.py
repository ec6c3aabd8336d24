"""KRaft's active controller: the cluster's decisions as metadata records (KIP-631).

`QuorumController` (quorum_controller.py) composes one module per concept, as Kafka's
control managers: cluster_control.py, replication_control.py with partition_change.py,
config_control.py, producer_ids.py, acl_control.py, scram_control.py, quota_control.py and
features.py. Every operation returns a `ControllerResult` (result.py); the state changes
only when its records are replayed. Rules: spec/kraft_controller.md (KCTRL).
"""
