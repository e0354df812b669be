"""Schema-driven forms: a form definition built from the very pydantic model that validates
what the form submits, so the SPA renders what the API accepts and nothing else.

Fields marked secret (SecretStr) are write-only: forms show them masked and may leave them
empty to keep the stored value. Fields holding free JSON (an object, a list, any value) are
`json`: forms show them as a JSON text area and send the parsed value. A list whose
choices are given is `multiselect`: forms send the chosen options' values, as a list.
"""

from typing import Any, Literal

from pydantic import BaseModel

from api.kit.model import ApiModel

FieldType = Literal[
    "string", "url", "integer", "number", "boolean", "select", "multiselect", "text", "json"
]


SCALARS: dict[str, FieldType] = {"integer": "integer", "number": "number", "boolean": "boolean"}


class Option(ApiModel):
    value: Any
    label: str


class Validation(ApiModel):
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None


class FormField(ApiModel):
    name: str
    label: str
    type: FieldType
    secret: bool = False
    required: bool = False
    nullable: bool = False  # may be sent empty (null)
    default: Any = None
    description: str | None = None
    validation: Validation = Validation()
    options: list[Option] | None = None


class Form(ApiModel):
    fields: list[FormField]


def _unwrap(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional field's schema without its null branch."""
    variants = prop.get("anyOf")
    if variants:
        concrete = [v for v in variants if v.get("type") != "null"]
        if len(concrete) == 1:
            merged = {**prop, **concrete[0]}
            merged.pop("anyOf", None)
            return merged
    return prop


def _type(prop: dict[str, Any]) -> FieldType:
    if "enum" in prop or "const" in prop:
        return "select"
    kind: str | None = prop.get("type")
    if kind in ("object", "array") or (kind is None and _free_json(prop)):
        return "json"
    if kind == "string" and prop.get("format") == "uri":
        return "url"
    if kind in SCALARS:
        return SCALARS[kind]
    if kind == "string" and prop.get("format") == "multiline":
        return "text"
    return "string"


def _free_json(prop: dict[str, Any]) -> bool:
    """pydantic's JsonValue: a reference to its definition, or a union of every JSON type."""
    ref = prop.get("$ref", "")
    return ref.endswith("/JsonValue") or "anyOf" in prop or prop == {}


def form_of(model: type[BaseModel], options: dict[str, list[Option]] | None = None) -> Form:
    """The form for `model`. `options` supplies choices known only at request time (the
    models a provider offers, say); they make a field a select."""
    schema = model.model_json_schema()
    required = set(schema.get("required", []))
    fields = []
    for name, raw in schema.get("properties", {}).items():
        prop = _unwrap(raw)
        nullable = any(v.get("type") == "null" for v in raw.get("anyOf", []))
        choices = (options or {}).get(name)
        if choices is None and "enum" in prop:
            choices = [Option(value=v, label=str(v)) for v in prop["enum"]]
        # A list with choices is picked from them, any number (a select takes one).
        chosen: FieldType = "multiselect" if prop.get("type") == "array" else "select"
        fields.append(
            FormField(
                name=name,
                label=prop.get("title", name.replace("_", " ").capitalize()),
                type=chosen if choices is not None else _type(prop),
                secret=prop.get("format") == "password" or bool(prop.get("writeOnly")),
                required=name in required,
                nullable=nullable,
                default=prop.get("default"),
                description=prop.get("description"),
                validation=Validation(
                    min_length=prop.get("minLength"),
                    max_length=prop.get("maxLength"),
                    pattern=prop.get("pattern"),
                    minimum=prop.get("minimum"),
                    maximum=prop.get("maximum"),
                ),
                options=choices,
            )
        )
    return Form(fields=fields)
