"""Declarative message schemas, mirroring Kafka's message JSON files.

Kafka does not hand-write a codec per request version. Each API has two JSON files
(`clients/src/main/resources/common/message/ProduceRequest.json` and `...Response.json`) that
declare the message *once* for its whole version range; a generator turns them into Java.
Every field says in which versions it exists, and more:

    { "name": "TransactionalId", "type": "string", "versions": "3+",
      "nullableVersions": "3+", "default": "null" }

* `versions` - "3+" (3 and later), "0-12", "5" or "none". A field outside its versions is not
  on the wire; encoding skips it and decoding fills in its default.
* `nullableVersions` - where a string, bytes, records, array or struct may be null.
* `default` - the value of an absent field (Kafka's implicit defaults: 0, false, "", empty).
* `flexibleVersions` (per message) - from which version the message is *flexible* (KIP-482):
  strings, bytes and arrays switch to their COMPACT_ forms and every struct ends with a
  TAG_BUFFER. One field may override it (`"flexibleVersions": "none"` keeps the request
  header's ClientId at its int16 length forever).
* `taggedVersions` + `tag` - a *tagged field* lives in the TAG_BUFFER instead of in the fixed
  layout. It is written only when it differs from its default, and a reader skips tags it does
  not know, so optional fields can be added without a version bump.
* types: `bool int8 int16 int32 int64 uint16 uint32 float64 string bytes records uuid`,
  `[]T` for arrays, and a capitalized name with inline `fields` for a nested struct, or a
  `StructSchema` made once for a struct several fields share (Kafka's `commonStructs`).

Here the same declaration is Python: `Field("TransactionalId", "string", "3+",
nullable_versions="3+", default=None)`. Names stay Kafka's; values use snake_case attributes
(`transactional_id`). A `Message` compiles, per version, a `StructCodec`: the list of fields on
the wire in Kafka's order, each with the codec from `types` for that version. Values are
instances of small generated classes with `__slots__` (one per struct, named like Kafka's
generated `ProduceRequestData.TopicProduceData`), fast to build and easy to read.

A struct may be nullable (DescribeTopicPartitions' `Cursor`): an INT8 marker, -1 for null,
else 1 and the struct (`types.NullableStruct`). A struct that several fields share (Kafka's
`commonStructs`: DescribeQuorum's `ReplicaState` for both `CurrentVoters` and `Observers`) is
a `StructSchema` declared once and passed as the fields' `fields`, so they hold values of one
class.

A request also says on which *listeners* it is served (Kafka's `"listeners"`: `broker`,
`controller`): the APIs of the KRaft quorum are a controller's, and a broker neither
advertises nor reads them (PROTO-21).

Spec rules: PROTO-6 (versions and defaults), PROTO-7 (flexible versions), PROTO-8 (tagged
fields), PROTO-10 (exact consumption), PROTO-11 (widening a declaration), PROTO-20 (nullable
structs), PROTO-21 (listeners).
"""

from __future__ import annotations

import copy
import re
import uuid
from typing import Any

from kafka_ref.protocol import types
from kafka_ref.protocol.errors import (
    ProtocolDecodeError,
    ProtocolEncodeError,
    UnsupportedVersionError,
)

MAX_VERSION = 0x7FFF
_MISSING = object()
_FIXED = {
    "bool": types.BOOLEAN,
    "int8": types.INT8,
    "int16": types.INT16,
    "int32": types.INT32,
    "int64": types.INT64,
    "uint16": types.UINT16,
    "uint32": types.UINT32,
    "float64": types.FLOAT64,
    "uuid": types.UUID,
}
_IMMUTABLE = (type(None), bool, int, float, str, bytes, uuid.UUID)
_IMPLICIT_DEFAULTS = {"bool": False, "float64": 0.0, "string": "", "bytes": b"", "records": None}
# The kinds of listener an API may be served on (Kafka's `ApiMessageType.ListenerType`).
LISTENERS = ("broker", "controller")


def parse_versions(spec: str | None) -> range | None:
    """Kafka's version-range notation: "3+", "0-7", "5", "none" -> a `range`."""
    if spec is None:
        return None
    if spec == "none":
        return range(0)
    if spec.endswith("+"):
        return range(int(spec[:-1]), MAX_VERSION + 1)
    low, _, high = spec.partition("-")
    return range(int(low), int(high or low) + 1)


def snake_case(name: str) -> str:
    """Kafka's field name to a Python attribute: ThrottleTimeMs -> throttle_time_ms."""
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class Field:
    """One field of a struct, declared for all versions at once (a line of Kafka's JSON)."""

    def __init__(
        self,
        name: str,
        type: str,
        versions: str,
        *,
        nullable_versions: str | None = None,
        default: Any = _MISSING,
        tagged_versions: str | None = None,
        tag: int | None = None,
        flexible_versions: str | None = None,
        fields: list[Field] | StructSchema | None = None,
        about: str = "",
    ):
        self.name, self.type, self.about = name, type, about
        self.attr = snake_case(name)
        self.versions = parse_versions(versions)
        self.nullable_versions = parse_versions(nullable_versions) or range(0)
        self.tagged_versions = parse_versions(tagged_versions) or range(0)
        self.flexible_versions = parse_versions(flexible_versions)
        self.tag = tag
        self.is_array = type.startswith("[]")
        self.element_type = type[2:] if self.is_array else type
        self.struct: StructSchema | None = None
        if isinstance(fields, StructSchema):  # a common struct, shared with other fields
            if fields.name != self.element_type:
                raise ValueError(f"{name}: type {self.element_type} given struct {fields.name}")
            self.struct = fields
        elif fields is not None:
            self.struct = StructSchema(self.element_type, fields)
        elif self.element_type[:1].isupper():
            raise ValueError(f"{name}: struct type {self.element_type} needs inline fields")
        elif self.element_type not in _FIXED and self.element_type not in types.SIZED:
            raise ValueError(f"{name}: unknown type {type!r}")
        if (tag is None) != (not self.tagged_versions):
            raise ValueError(f"{name}: a tagged field needs both tag and tagged_versions")
        if self.nullable_versions and self.element_type in _FIXED and not self.is_array:
            raise ValueError(f"{name}: {type} cannot be nullable")
        self.default = default

    def make_default(self) -> Any:
        """A fresh default value (fresh, so nobody shares a mutable list or struct)."""
        if self.default is not _MISSING:
            return copy.copy(self.default)
        if self.is_array:
            return []
        if self.struct is not None:
            return self.struct.cls()
        if self.element_type == "uuid":
            return types.ZERO_UUID
        return _IMPLICIT_DEFAULTS.get(self.element_type, 0)

    @property
    def default_is_shared(self) -> bool:
        """True when the default is immutable, so every decoded value may share one object."""
        return isinstance(self.make_default(), _IMMUTABLE)

    def codec(self, version: int, flexible: bool) -> types.Codec:
        """The wire codec of this field at `version` (compact forms when flexible)."""
        compact = flexible and (self.flexible_versions is None or version in self.flexible_versions)
        nullable = version in self.nullable_versions
        if self.struct is not None:
            element: types.Codec = self.struct.codec(version, flexible)
            if nullable and not self.is_array:  # an INT8 marker, then the struct
                element = types.NullableStruct(element)
        elif self.element_type in _FIXED:
            element = _FIXED[self.element_type]
        else:
            element = types.SIZED[self.element_type][(compact, nullable and not self.is_array)]
        return types.Array(element, compact, nullable) if self.is_array else element


class Struct:
    """Base of the generated value classes: keyword construction, equality, repr, to_dict."""

    __slots__ = ()
    _schema: StructSchema

    def __init__(self, **values: Any):
        for attr, shared, make_default in self._schema.defaults:
            value = values.pop(attr, _MISSING)
            if value is _MISSING:  # an immutable default is shared; a list or struct is not
                value = shared if make_default is None else make_default()
            setattr(self, attr, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(values)}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self._schema.attrs)

    __hash__ = None  # type: ignore[assignment]  # mutable values

    def __repr__(self) -> str:
        parts = ", ".join(f"{a}={_short(getattr(self, a))}" for a in self._schema.attrs)
        return f"{type(self).__name__}({parts})"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (dicts, lists, bytes), e.g. for JSON or for comparing in tests."""
        return {a: _plain(getattr(self, a)) for a in self._schema.attrs}


def _short(value: Any) -> str:
    return f"<{len(value)} bytes>" if isinstance(value, memoryview) else repr(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return bytes(value) if isinstance(value, memoryview) else value


class StructSchema:
    """A struct: an ordered list of fields and the generated class that holds its values."""

    def __init__(self, name: str, fields: list[Field]):
        self.name, self.fields = name, tuple(fields)
        self.attrs = tuple(f.attr for f in self.fields)
        if len(set(self.attrs)) != len(self.attrs):
            raise ValueError(f"{name}: duplicate field names")
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise ValueError(f"{name}: duplicate tags")
        self.cls: type[Struct] = type(name, (Struct,), {"__slots__": self.attrs, "_schema": self})
        # Per field, what a value built without it gets: (attr, shared default, None) when
        # the default is immutable, else (attr, None, the field's make_default).
        self.defaults = tuple(
            (f.attr, f.make_default(), None)
            if f.default_is_shared
            else (f.attr, None, f.make_default)
            for f in self.fields
        )
        self._codecs: dict[tuple[int, bool], StructCodec] = {}

    def codec(self, version: int, flexible: bool) -> StructCodec:
        key = (version, flexible)
        codec = self._codecs.get(key)
        if codec is None:
            codec = self._codecs[key] = StructCodec(self, version, flexible)
        return codec

    def nested(self) -> dict[str, StructSchema]:
        """Every struct declared inside this one, by Kafka's type name."""
        found: dict[str, StructSchema] = {}
        for field in self.fields:
            if field.struct is not None:
                found[field.struct.name] = field.struct
                found.update(field.struct.nested())
        return found


class StructCodec(types.Codec):
    """A struct compiled for one version: which fields are on the wire, in which order, how."""

    def __init__(self, schema: StructSchema, version: int, flexible: bool):
        self.name, self.version = schema.name, version
        self.cls, self.flexible = schema.cls, flexible
        self.wire: list[tuple[str, types.Codec]] = []  # fixed layout, in declaration order
        self.tagged: list[tuple[str, int, types.Codec, Any]] = []  # TAG_BUFFER entries
        defaults: list[Field] = []  # set on decode: absent, or tagged (maybe overwritten)
        for field in schema.fields:
            if version not in field.versions:
                defaults.append(field)
            elif flexible and version in field.tagged_versions:
                codec = field.codec(version, flexible)
                self.tagged.append((field.attr, field.tag, codec, field.make_default()))
                defaults.append(field)
            else:
                self.wire.append((field.attr, field.codec(version, flexible)))
        # Immutable defaults are shared; lists and structs are made fresh for every value.
        self.shared = [(f.attr, f.make_default()) for f in defaults if f.default_is_shared]
        self.fresh = [(f.attr, f.make_default) for f in defaults if not f.default_is_shared]
        self.tagged.sort(key=lambda entry: entry[1])
        self.by_tag = {tag: (attr, codec) for attr, tag, codec, _ in self.tagged}
        self.min_size = sum(c.min_size for _, c in self.wire) + (1 if flexible else 0)

    def encode_into(self, out: bytearray, value: Any) -> None:
        for attr, codec in self.wire:
            try:
                codec.encode_into(out, getattr(value, attr))
            except ProtocolEncodeError as exc:
                exc.path.insert(0, attr)
                raise
            except AttributeError:
                raise ProtocolEncodeError(f"{self.cls.__name__} has no {attr}: {value!r}") from None
        if self.flexible:
            tagged = []
            for attr, tag, codec, default in self.tagged:
                field_value = getattr(value, attr)
                if field_value != default:  # Kafka writes a tagged field only if non-default
                    tagged.append((tag, codec.encode(field_value)))
            types.TAG_BUFFER.encode_into(out, tagged)

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        obj = self.cls.__new__(self.cls)
        for attr, default in self.shared:
            setattr(obj, attr, default)
        for attr, make_default in self.fresh:
            setattr(obj, attr, make_default())
        for attr, codec in self.wire:
            try:
                value, pos = codec.decode(buf, pos)
            except ProtocolDecodeError as exc:
                exc.path.insert(0, attr)
                raise
            setattr(obj, attr, value)
        if self.flexible:
            raw, pos = types.TAG_BUFFER.decode(buf, pos)
            for tag, data in raw:
                known = self.by_tag.get(tag)
                if known is None:
                    continue  # an unknown tag is skipped: that is what makes tags optional
                attr, codec = known
                try:
                    value, end = codec.decode(data, 0)
                except ProtocolDecodeError as exc:
                    exc.path.insert(0, attr)
                    raise
                if end != len(data):
                    raise ProtocolDecodeError(
                        f"tagged field {attr} has {len(data) - end} extra bytes"
                    )
                setattr(obj, attr, value)
        return obj, pos


class Message(StructSchema):
    """A request or response: a top-level struct with an API key and version ranges."""

    def __init__(
        self,
        name: str,
        *,
        api_key: int | None,
        valid_versions: str,
        flexible_versions: str,
        fields: list[Field],
        listeners: tuple[str, ...] = ("broker",),
        about: str = "",
    ):
        super().__init__(name, fields)
        self.api_key, self.about = api_key, about
        # Where the API is served: Kafka declares it in the request's JSON, and the registry
        # reads the request's (messages.APIS); a broker's listener unless declared.
        if not listeners or not set(listeners) <= set(LISTENERS):
            raise ValueError(f"{name}: listeners {listeners} not among {LISTENERS}")
        self.listeners = tuple(listeners)
        self.valid_versions = parse_versions(valid_versions)
        self.flexible_versions = parse_versions(flexible_versions)
        self.structs = self.nested()
        flexible = self.flexible_versions
        for field in self._all_fields():
            tagged = field.tagged_versions
            if tagged and (tagged.start < flexible.start or tagged.stop > flexible.stop):
                raise ValueError(f"{name}.{field.name}: tagged outside flexible versions")

    def _all_fields(self) -> list[Field]:
        return [f for s in (self, *self.structs.values()) for f in s.fields]

    def __call__(self, **values: Any) -> Any:
        """Build a value: `ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[...])`."""
        return self.cls(**values)

    def __getattr__(self, name: str) -> type[Struct]:
        """Nested struct classes by Kafka's type name: `ProduceRequest.TopicProduceData`."""
        structs = self.__dict__.get("structs") or {}
        if name in structs:
            return structs[name].cls
        raise AttributeError(f"{self.__dict__.get('name')} has no struct {name!r}")

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def compiled(self, version: int) -> StructCodec:
        if version not in self.valid_versions:
            v = self.valid_versions
            raise UnsupportedVersionError(
                f"{self.name} v{version} is not in {v.start}-{v.stop - 1}"
            )
        return self.codec(version, version in self.flexible_versions)

    def encode_into(self, version: int, out: bytearray, value: Any) -> None:
        try:
            self.compiled(version).encode_into(out, value)
        except ProtocolEncodeError as exc:
            exc.path.insert(0, self.name)
            raise

    def encode(self, version: int, value: Any) -> bytes:
        out = bytearray()
        self.encode_into(version, out, value)
        return bytes(out)

    def decode_from(self, version: int, buf: Any, pos: int) -> tuple[Any, int]:
        try:
            return self.compiled(version).decode(buf, pos)
        except ProtocolDecodeError as exc:
            exc.path.insert(0, self.name)
            raise

    def decode(self, version: int, buf: Any) -> Any:
        """Decode exactly one message; bytes left over are an error (PROTO-10)."""
        view = buf if isinstance(buf, memoryview) else memoryview(buf)
        value, pos = self.decode_from(version, view, 0)
        if pos != len(view):
            raise ProtocolDecodeError(
                f"{len(view) - pos} bytes left over after {self.name} v{version}", pos=pos
            )
        return value

    def with_versions(self, valid_versions: str) -> Message:
        """The same declaration over another range: how a new version is added (PROTO-11)."""
        widened = copy.copy(self)
        widened.valid_versions = parse_versions(valid_versions)
        return widened

    def describe(self, version: int) -> str:
        """The layout at `version` in the style of Kafka's protocol guide (a teaching aid)."""
        lines = [f"{self.name} (Version: {version}) =>"]
        self._describe(self.compiled(version), lines, "  ")
        return "\n".join(lines)

    def _describe(self, codec: StructCodec, lines: list[str], indent: str) -> None:
        for attr, field_codec in codec.wire:
            lines.append(f"{indent}{attr} => {field_codec.name}")
            inner = getattr(field_codec, "element", field_codec)  # an array's element
            inner = getattr(inner, "struct", inner)  # a nullable struct's struct
            if isinstance(inner, StructCodec):
                self._describe(inner, lines, indent + "  ")
        for attr, tag, field_codec, _ in codec.tagged:
            lines.append(f"{indent}{attr} => {field_codec.name} (tag {tag})")
        if codec.flexible:
            lines.append(f"{indent}_tagged_fields => TAG_BUFFER")
