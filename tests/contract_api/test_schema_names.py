"""Generated clients name their types after the document's schemas: each name is the
model's own, never the module path FastAPI falls back on when two models share a class
name (`api__seed002__schemas__MessageIn`), which would rename a client's types whenever
a module moves."""

from tests.contract_api.documents import both_modes


def test_schema_names_are_the_models_own() -> None:
    for mode, doc in both_modes().items():
        names = doc["components"]["schemas"]
        assert [name for name in names if "__" in name] == [], mode
