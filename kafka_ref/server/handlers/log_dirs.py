"""DescribeLogDirs: where this broker keeps each partition, and how big it is (KIP-113).

With several `log.dirs` (DUR-13) an operator needs to know which directory holds which
partition, how full each directory's volume is, and how much each partition takes: to
balance the disks, or to find what fills one. DescribeLogDirs (key 35; Kafka:
`KafkaApis.handleDescribeLogDirsRequest` -> `ReplicaManager.describeLogDirs`) answers, per
log directory in `log.dirs` order (BROKER-52):

* its absolute path, error code 0, and since v4 the total and usable bytes of its volume;
  a directory that failed while the broker runs (DUR-16) has KAFKA_STORAGE_ERROR, no
  partitions and -1 bytes, as Kafka answers for an offline directory;
* per partition it holds that the request names (topics null: all of them) the size of its
  segments, the offset lag (`ReplicaManager.describe_log_dirs`) and `is_future_key` false
  (kafka-ref cannot move a replica between directories: no AlterReplicaLogDirs).

Since v5 each directory also says whether it is *cordoned* (KIP-1066): named in this
broker's `cordoned.log.dirs` (or that is `*`), a dynamic per-broker config (BROKER-76).

Describing needs DESCRIBE on the cluster (SEC-17); without it the answer lists no
directory, and v3+ says CLUSTER_AUTHORIZATION_FAILED at the top, as Kafka does.

Rules: BROKER-52, BROKER-76, DUR-16.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import DescribeLogDirsResponse
from kafka_ref.server.handlers.authz import Op, Res, authorized
from kafka_ref.server.request_channel import Request

if TYPE_CHECKING:
    from kafka_ref.server.handlers.context import ApiContext

Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
Partition = DescribeLogDirsResponse.DescribeLogDirsPartition


def _cordoned(log_dir: str, cordoned: set[str]) -> bool:
    return "*" in cordoned or any(os.path.abspath(d) == log_dir for d in cordoned)


def handle_describe_log_dirs(apis: ApiContext, request: Request) -> Any:
    if not authorized(apis, request, Op.DESCRIBE, Res.CLUSTER):
        return DescribeLogDirsResponse(
            throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
        )
    topics = request.body.topics
    cordoned = set(apis.config["cordoned.log.dirs"])
    asked = None if topics is None else {(t.topic, p) for t in topics for p in t.partitions}
    results = []
    for log_dir, partitions in apis.replica_manager.describe_log_dirs(
        lambda tp: asked is None or tp in asked
    ):
        if partitions is None:  # offline (DUR-16)
            results.append(
                Result(
                    error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                    log_dir=log_dir,
                    topics=[],
                    total_bytes=-1,
                    usable_bytes=-1,
                    is_cordoned=_cordoned(log_dir, cordoned),
                )
            )
            continue
        by_topic: dict[str, list] = {}
        for (topic, index), (size, lag) in partitions.items():
            by_topic.setdefault(topic, []).append(
                Partition(
                    partition_index=index, partition_size=size, offset_lag=lag, is_future_key=False
                )
            )
        usage = shutil.disk_usage(log_dir)
        results.append(
            Result(
                error_code=ErrorCode.NO_ERROR,
                log_dir=log_dir,
                topics=[Topic(name=t, partitions=p) for t, p in by_topic.items()],
                total_bytes=usage.total,
                usable_bytes=usage.free,
                is_cordoned=_cordoned(log_dir, cordoned),
            )
        )
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=results)
