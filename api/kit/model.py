"""The base of the service's pydantic models."""

import warnings

from pydantic import BaseModel, ConfigDict
from pydantic.warnings import UnsupportedFieldAttributeWarning

# FastAPI wraps a route's body model in `Body(alias="body")`; with the model's schema built
# on first use, pydantic notes that this alias has no effect (it has none: FastAPI reads the
# body itself). Said once per process, at the first request with a body, to no one's use.
warnings.filterwarnings(
    "ignore",
    message="The 'alias' attribute with value 'body'",
    category=UnsupportedFieldAttributeWarning,
)


class ApiModel(BaseModel):
    """A pydantic model whose validator and serializer are built when it is first used, not
    when its class is defined: for the service's hundred-odd models that was 50-100 ms of
    every process's start (docs/performance.md), though a request uses a few of them."""

    model_config = ConfigDict(defer_build=True)
