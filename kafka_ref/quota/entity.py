"""Who a quota applies to: users, client ids, both, and their defaults (KIP-55).

A quota is set on a *quota entity*: a user (the authenticated principal's name, KIP-55), a
client id (what the client calls itself, KIP-13), a user and one of its client ids, or the
*default* of either, written `<default>` (Kafka's `ConfigEntityName.Default`). Each entity
holds up to three *quota keys*:

    producer_byte_rate    bytes per second a producer may append (Produce requests)
    consumer_byte_rate    bytes per second a consumer may fetch (Fetch responses)
    request_percentage    percent of one request handler thread's time, per quota window
                          (KIP-124; 200 = two threads' worth)

A connection (user U, client id C) is governed by the *first* of eight levels that holds a
quota for the key (Kafka's `ClientQuotaManager.DefaultQuotaCallback.quotaLimit`):

    1 /config/users/U/clients/C           5 /config/users/<default>/clients/<default>
    2 /config/users/U/clients/<default>   6 /config/users/<default>
    3 /config/users/U                     7 /config/clients/C
    4 /config/users/<default>/clients/C   8 /config/clients/<default>

The level found also decides *who shares the measured rate* (`quotaMetricTags`): at levels
1, 2, 4 and 5 every connection with the same user and client id shares one rate; at 3 and
6 all the user's client ids share one (a user quota is the user's total); at 7 and 8 all
connections with that client id share one, whoever the user is.

In ZooKeeper an entity is the znode `/config/<path>` (`users/alice`,
`users/alice/clients/app`, `clients/<default>`), holding `{"version":1,"config":{...}}`;
names in paths are URL-encoded (Kafka's `Sanitizer`: `a b` -> `a%20b`). In the protocol
(DescribeClientQuotas, AlterClientQuotas; KIP-546) an entity is a list of (type, name)
with types `user` and `client-id`, and a null name for the default.

Rules: QUOTA-1, QUOTA-2, QUOTA-3.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

DEFAULT = "<default>"  # the default entity's name in paths and tools (Kafka: ConfigEntityName)
USER, CLIENT_ID = "user", "client-id"  # the protocol's entity types (ClientQuotaEntity)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
_WHOLE = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)  # Kafka defines the byte rates as LONG


class InvalidQuotaError(ValueError):
    """An entity or a quota value Kafka would refuse (INVALID_REQUEST on the wire)."""


def sanitize(name: str) -> str:
    """A name as Kafka writes it in a znode path (`Sanitizer.sanitize`: URL encoding, with
    `*` and space percent-encoded)."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote(name)


@dataclass(frozen=True)
class QuotaEntity:
    """A user, a client id, or both; None: not part of the entity; DEFAULT: the default."""

    user: str | None = None
    client_id: str | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise InvalidQuotaError("a quota entity names a user, a client id, or both")

    # -- znode paths, under /config --------------------------------------------------
    @property
    def path(self) -> str:
        """`users/U`, `clients/C` or `users/U/clients/C` (names sanitized)."""

        def part(name: str) -> str:
            return name if name == DEFAULT else sanitize(name)

        if self.user is None:
            return f"clients/{part(self.client_id)}"
        if self.client_id is None:
            return f"users/{part(self.user)}"
        return f"users/{part(self.user)}/clients/{part(self.client_id)}"

    @classmethod
    def from_path(cls, path: str) -> QuotaEntity:
        parts = path.strip("/").split("/")

        def name(raw: str) -> str:
            return raw if raw == DEFAULT else desanitize(raw)

        if len(parts) == 2 and parts[0] == "clients":
            return cls(None, name(parts[1]))
        if len(parts) == 2 and parts[0] == "users":
            return cls(name(parts[1]), None)
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls(name(parts[1]), name(parts[3]))
        raise InvalidQuotaError(f"not a quota entity path: {path}")

    # -- the protocol's form: [(type, name or None for the default)] -------------------
    def components(self) -> list[tuple[str, str | None]]:
        out = []
        if self.user is not None:
            out.append((USER, None if self.user == DEFAULT else self.user))
        if self.client_id is not None:
            out.append((CLIENT_ID, None if self.client_id == DEFAULT else self.client_id))
        return out

    @classmethod
    def from_components(cls, components: list[tuple[str, str | None]]) -> QuotaEntity:
        found: dict[str, str] = {}
        for entity_type, name in components:
            if entity_type not in (USER, CLIENT_ID):
                raise InvalidQuotaError(f"Unsupported quota entity type: {entity_type}")
            if entity_type in found:
                raise InvalidQuotaError(f"Duplicate quota entity type: {entity_type}")
            if name == "":
                raise InvalidQuotaError(f"Empty {entity_type} name in a quota entity")
            found[entity_type] = DEFAULT if name is None else name
        if not found:
            raise InvalidQuotaError("Invalid empty client quota entity")
        return cls(found.get(USER), found.get(CLIENT_ID))

    def __str__(self) -> str:
        return self.path


def validate_value(key: str, value: float) -> float:
    """A quota value as Kafka accepts it: a known key, positive, whole for byte rates."""
    if key not in QUOTA_KEYS:
        raise InvalidQuotaError(f"Invalid configuration key {key}")
    if not value > 0:  # also refuses NaN
        raise InvalidQuotaError(f"{key} must be positive, not {value}")
    if key in _WHOLE and value != int(value):
        raise InvalidQuotaError(f"{key} must be a whole number of bytes per second, not {value}")
    return float(value)


def quota_levels(user: str, client_id: str) -> list[QuotaEntity]:
    """The eight entities that may govern (user, client id), most specific first (KIP-55)."""
    return [
        QuotaEntity(user, client_id),
        QuotaEntity(user, DEFAULT),
        QuotaEntity(user, None),
        QuotaEntity(DEFAULT, client_id),
        QuotaEntity(DEFAULT, DEFAULT),
        QuotaEntity(DEFAULT, None),
        QuotaEntity(None, client_id),
        QuotaEntity(None, DEFAULT),
    ]


def governing(
    overrides: dict[QuotaEntity, float], user: str, client_id: str
) -> tuple[QuotaEntity, float] | None:
    """The level whose quota applies to (user, client id), and the quota; None: unlimited."""
    for entity in quota_levels(user, client_id):
        bound = overrides.get(entity)
        if bound is not None:
            return entity, bound
    return None


def sensor_key(level: QuotaEntity | None, user: str, client_id: str) -> tuple[str, str]:
    """(user tag, client-id tag): who shares the measured rate (Kafka's quotaMetricTags).

    A user-only level (3, 6) shares it among the user's client ids, a client-only level
    (7, 8) or no quota at all among the client id's users; the others per (user, client)."""
    if level is None or level.user is None:
        return "", client_id
    if level.client_id is None:
        return user, ""
    return user, client_id
