"""A search's parameters as routes take them from a query string: the words (`query`, or
its alias `q`), the similarity floor, "as of" and history (api/search/params.py holds
their names and types for every surface)."""

from typing import Annotated

from fastapi import Depends, Query, Request

from api.search.params import (
    AS_OF_DESCRIPTION,
    DESCRIPTION,
    MAX_QUERY_CHARS,
    NAMES,
    Moment,
    check_one,
)


async def _search_query(
    request: Request,
    query: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            validation_alias=NAMES,
            description=DESCRIPTION,
        ),
    ],
) -> str:
    check_one(request.query_params)
    return query


# A route's query string parameter `query` (or `q`).
SearchQuery = Annotated[str, Depends(_search_query)]


# The floor a search may ask for in place of its model's (api/search/engine.py).
MinSimilarity = Annotated[
    float | None,
    Query(
        ge=-1.0,
        le=1.0,
        description="The least cosine similarity a semantic match needs; "
        "default: the model's floor.",
    ),
]


AsOf = Annotated[Moment | None, Query(description=AS_OF_DESCRIPTION)]
IncludeHistory = Annotated[
    bool,
    Query(
        description="Also memories that were replaced (superseded) by newer ones, each with "
        "`superseded_at` and `superseded_by`. Default: only when the question is about the "
        'past ("where did I live before?", "in 2024").'
    ),
]
