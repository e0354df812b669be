"""An embedder wrapped by a test: every call goes to the real one (the shipped static
model, say); a subclass overrides `embed_async` to watch or hold the calls it gets."""

from collections.abc import Sequence

from api.embeddings.base import Embedder, Vectors


class DelegatingEmbedder:
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed(texts)

    async def embed_async(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        return await self.inner.embed_async(texts, background=background)

    async def aclose(self) -> None:
        await self.inner.aclose()
