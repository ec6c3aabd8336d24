"""The broker: the asyncio adapter that puts the log behind Kafka's wire protocol.

Kafka's broker is layered, and so is this package (docs/broker.md walks a request through):

* `socket_server` - `SocketServer`: the `Acceptor` takes connections, checked against the
  `connection_quotas`; idle ones are closed;
* `network` - one `Processor` per connection reads size-prefixed frames (their memory from
  the `memory_pool`) and writes responses in request order, file slices with `sendfile`
  (`send_file`);
* `sasl_server` - `SaslServerAuthenticator`: a SASL connection's handshake and
  authentication, before any other request is served;
* `request_channel` - the `RequestChannel` queue between the network and the API handlers;
* `response` - responses as bytes plus file slices (zero copy);
* `handlers` - `KafkaApis`: one module per API family, thin translations from protocol
  messages to calls on the core;
* `replica_manager` - `ReplicaManager` and `Partition`: the partitions this broker leads,
  their high watermark, appends and reads;
* `purgatory` - `DelayedOperationPurgatory`: requests that wait (long-polling fetches);
* `kafka_config` - `KafkaConfig`: broker configs by Kafka's names, properties files;
* `broker` - `Broker`: builds all of it, runs the periodic tasks, starts and stops.
"""
