"""Records on the wire and on disk: what a producer sends, a log stores and a consumer reads.

Kafka never handles records one by one on its hot path: a producer groups them into a
*record batch* (v2, KIP-98), one header with the offsets, timestamps, producer id and a
CRC-32C, then the records, compressed together. The broker checks the header and the CRC,
stamps the base offset and appends the bytes as they came. Read in this order: `varint`
(the records' integers), `record` (one record inside a batch), `batch` (the batch and its
header), `compression` (the codecs); `legacy` is the v0/v1 message format old clients send.
"""
