"""Client quotas: how a broker keeps one client from taking all of it (KIP-13, KIP-55, KIP-124).

Kafka bounds, per user and per client id, the bytes a client produces and fetches per
second and the share of the request handlers' time it takes. The package follows Kafka's
`ClientQuotaManager` family, one module per concept:

    entity.py   who a quota applies to, the eight levels of precedence, who shares a rate
    rate.py     a rate over sampled windows (Kafka's SampledStat and Rate)
    manager.py  record, measure, compute the throttle time; the three quota types
    store.py    where quotas live: the metadata directory, or ZooKeeper's /config znodes

The broker applies them as each response leaves (server/throttling.py) and mutes a
throttled client's connection (server/network.py); the quota APIs are
server/handlers/client_quotas.py. docs/quotas.md tells the whole story.
"""
