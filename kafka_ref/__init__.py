"""kafka-ref: an educational reference implementation of Apache Kafka that is also a real broker."""

__version__ = "0.1.0"
