"""The base of every stored model: its key, its entity type, and the mapping to an item."""

from typing import Any, ClassVar, Self

from pydantic import ConfigDict

from api.kit.model import ApiModel
from api.store.keys import ENTITY
from api.store.table import PK, SK, InvalidItem, Item, Key

INDEX_ATTRIBUTES = ("gsi1pk", "gsi1sk")


class Entity(ApiModel):
    """A model stored as one item. Subclasses name their ENTITY and build their key."""

    model_config = ConfigDict(extra="ignore")

    ENTITY: ClassVar[str]

    def key(self) -> Key:
        raise NotImplementedError

    def index_keys(self) -> dict[str, str]:
        """Secondary-index key attributes, for entities that appear in an index."""
        return {}

    def to_dynamo_item(self) -> Item:
        fields = self.model_dump(mode="json", exclude_none=True)
        return {**self.key().as_item(), **self.index_keys(), ENTITY: self.ENTITY, **fields}

    @classmethod
    def from_dynamo_item(cls, item: Item) -> Self:
        if item.get(ENTITY) != cls.ENTITY:
            raise InvalidItem(f"Expected an item of entity {cls.ENTITY}, got {item.get(ENTITY)!r}.")
        skip = {PK, SK, ENTITY, *INDEX_ATTRIBUTES}
        data: dict[str, Any] = {k: v for k, v in item.items() if k not in skip}
        return cls.model_validate(data)
