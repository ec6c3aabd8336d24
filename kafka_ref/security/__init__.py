"""Security: listeners and their protocols, TLS, SASL authentication and principals.

Kafka's security model has two halves. The first, here, answers *who is this connection?*:
each listener speaks one security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); TLS
encrypts the bytes and may authenticate the client by its certificate (mTLS); SASL
authenticates a user by a mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) before any other
request is served. The answer is a *principal*, `User:<name>`, kept with the connection
for every request it sends. The second half, authorization (ACLs: may this principal do
this operation on this resource?), stands on it.

    listeners.py    listener names, security protocols, endpoints; a listener's settings
    ssl_config.py   the TLS context from Kafka's ssl.* keys (PEM keystores, KIP-651)
    principal.py    the principal of a connection (Kafka: DefaultKafkaPrincipalBuilder)
    plain.py        the PLAIN mechanism (RFC 4616) and the JAAS-style user list
    scram.py        the SCRAM mechanisms (RFC 5802, RFC 7677)
    sasl_client.py  the client's side of PLAIN and SCRAM and of the SaslHandshake and
                    SaslAuthenticate exchange, for clients and brokers connecting to brokers
    client_security.py  a client's security.protocol, sasl.* and ssl.* properties
    inter_broker.py how a broker connects to other brokers: the inter-broker listener's TLS
                    and SASL, client side
    credentials.py  SCRAM credentials, salted and hashed: the metadata directory's file, or
                    ZooKeeper's /config/users
    acls.py         ACLs: resources, patterns, operations, and the decision `authorize`
    authorizer.py   the broker's authorizer: super users, ACL storage (file, ZooKeeper)

The broker's side of the SASL exchange, a state machine per connection in its network layer,
is `kafka_ref/server/sasl_server.py`; it stands on the mechanisms here.

Rules: spec/security.md.
"""
