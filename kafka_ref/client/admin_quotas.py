"""The admin client's client-quota operations (Kafka's `Admin.describeClientQuotas`,
`alterClientQuotas`, KIP-546): what `kafka-configs.sh --entity-type users|clients` does.

    admin.alter_client_quotas(QuotaEntity(client_id="app"), {"producer_byte_rate": 1048576})
    admin.alter_client_quotas(QuotaEntity(user="alice"), remove=["consumer_byte_rate"])
    admin.describe_client_quotas([("client-id", EXACT, "app")])  # {entity: {key: value}}

An entity is a user, a client id or both (`DEFAULT`, `<default>`, for the default;
quota/entity.py). Each request goes to any broker: every broker reads the stored quotas, so
`QuotaAdmin` needs only a way to send to any broker (admin_requests.py). A
refusal raises `KafkaError` (INVALID_REQUEST for an unknown key or a bad value,
CLUSTER_AUTHORIZATION_FAILED without the cluster's DESCRIBE_CONFIGS or ALTER_CONFIGS).

Spec rules: QUOTA-9, QUOTA-10 (spec/quotas.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafka_ref.client.admin_requests import SendToAny, check
from kafka_ref.protocol import ApiKey
from kafka_ref.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka_ref.quota.entity import QuotaEntity

EXACT, DEFAULT_NAME, ANY = 0, 1, 2  # a filter component's match type


class QuotaAdmin:
    """Client quota operations of `Admin`."""

    def __init__(self, send_to_any: SendToAny) -> None:
        self._send = send_to_any

    def describe_client_quotas(
        self, components: Iterable[tuple[str, int, str | None]] = (), *, strict: bool = False
    ) -> dict[QuotaEntity, dict[str, float]]:
        """The quotas of the entities the filter matches: (entity type, match type, name)."""
        component = DescribeClientQuotasRequest.ComponentData
        body = DescribeClientQuotasRequest(
            components=[component(entity_type=t, match_type=m, match=n) for t, m, n in components],
            strict=strict,
        )
        response = self._send(ApiKey.DESCRIBE_CLIENT_QUOTAS, body)
        check("describe client quotas", response.error_code, response.error_message)
        return {
            QuotaEntity.from_components([(e.entity_type, e.entity_name) for e in entry.entity]): {
                v.key: v.value for v in entry.values
            }
            for entry in response.entries or []
        }

    def alter_client_quotas(
        self,
        entity: QuotaEntity,
        set_: Mapping[str, float] | None = None,
        remove: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Set and remove quota keys of one entity."""
        request = AlterClientQuotasRequest
        ops = [request.OpData(key=k, value=float(v), remove=False) for k, v in (set_ or {}).items()]
        ops += [request.OpData(key=k, value=0.0, remove=True) for k in remove]
        body = request(
            entries=[
                request.EntryData(
                    entity=[
                        request.EntityData(entity_type=t, entity_name=n)
                        for t, n in entity.components()
                    ],
                    ops=ops,
                )
            ],
            validate_only=validate_only,
        )
        response = self._send(ApiKey.ALTER_CLIENT_QUOTAS, body)
        for entry in response.entries:
            check(f"alter client quotas of {entity}", entry.error_code, entry.error_message)
