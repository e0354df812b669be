"""Settings from the environment, built once in create_app, never imported as a global."""

from pathlib import Path
from typing import Annotated, Literal

from platformdirs import user_data_dir
from pydantic import AfterValidator, AliasChoices, AnyHttpUrl, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

APP_NAME = "agent-memory"
EmbeddingBackend = Literal["onnx", "static", "local", "ollama", "openai", "none"]
DEFAULT_PORT = 8283  # seed 002's (and Letta's), so its client's default URL reaches us


def _also(name: str, seed_name: str) -> AliasChoices:
    """A setting read under our name or, when ours is unset, under seed 002's."""
    return AliasChoices(name, seed_name)


def default_sqlite_path() -> Path:
    return Path(user_data_dir(APP_NAME, appauthor=False)) / "agent-memory.db"


class Settings(BaseSettings):
    """Every variable is read from the environment under its upper-case name."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)

    store: Literal["sqlite", "dynamodb"] = "sqlite"
    sqlite_path: Annotated[Path, AfterValidator(Path.expanduser)] = Field(
        default_factory=default_sqlite_path,
        validation_alias=_also("sqlite_path", "memory_server_db_path"),
    )
    dynamodb_table: str = Field(default="agent-memory", pattern=r"^[A-Za-z0-9_.-]{3,255}$")
    dynamodb_endpoint: AnyHttpUrl | None = None
    aws_region: str = Field(default="us-east-1", min_length=1)
    create_table: bool = True

    host: str = Field(default="127.0.0.1", validation_alias=_also("host", "memory_server_host"))
    port: int = Field(
        default=DEFAULT_PORT, ge=1, le=65535, validation_alias=_also("port", "memory_server_port")
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    auth_mode: Literal["local", "google"] = "local"
    allow_remote: bool = False
    # Host names the local server answers to (against DNS rebinding); ALLOW_REMOTE does
    # not change them.
    allowed_hosts: str = "localhost,127.0.0.1,::1"
    local_user_email: str = Field(default="local@localhost", min_length=3)

    jwt_secret: SecretStr | None = None
    access_token_minutes: int = Field(default=15, ge=1, le=60)
    refresh_token_days: int = Field(default=30, ge=1, le=365)
    cookie_secure: bool = True
    google_client_id: str | None = None
    google_client_secret: SecretStr | None = None
    google_discovery_url: AnyHttpUrl = AnyHttpUrl(
        "https://accounts.google.com/.well-known/openid-configuration"
    )
    frontend_url: AnyHttpUrl = AnyHttpUrl("http://localhost:5173")
    # The API's own public address, for the OAuth callback; unset: the request's address.
    public_url: AnyHttpUrl | None = None
    # Public host names the MCP endpoint (/mcp) answers besides ALLOWED_HOSTS and
    # PUBLIC_URL's host, comma-separated (its DNS-rebinding guard answers others 421).
    mcp_public_hosts: str = ""
    encryption_key: SecretStr | None = None
    # Older keys, comma-separated: still decrypt, never encrypt (see `agent-memory reencrypt`).
    encryption_old_keys: SecretStr | None = None
    # Whether users' provider base URLs may reach private and loopback networks
    # (a self-hosted Ollama, say). Unset: allowed in local mode, refused in google mode.
    allow_private_provider_urls: bool | None = None
    # A turn's LLM calls at most; the last one offers no tools, so the model must answer.
    max_turn_steps: int = Field(default=8, ge=2, le=50)
    # How long a specialist's turn, asked by another agent's, may take (and never past the
    # turn that asked); its own LLM calls are bounded by MAX_TURN_STEPS.
    specialist_seconds: float = Field(default=120.0, gt=0, le=3600)
    # Seconds between SSE keep-alive comments while a turn streams.
    sse_ping_seconds: float = Field(default=15.0, gt=0, le=300)
    # Text deltas arriving this close together go out as one SSE event (0: each on its
    # own). The first delta of a step is never held back.
    sse_coalesce_ms: float = Field(default=5.0, ge=0, le=1000)
    # How long a turn sent with an Idempotency-Key goes on after its client left, waiting
    # for the client to come back for it (GET /runs/{id}/events, or the request again).
    run_resume_seconds: float = Field(default=10.0, ge=0, le=300)
    # How long a deleted archival memory can be restored (POST .../restore) before it is
    # gone for good (the table's TTL then removes its copy).
    archival_undo_seconds: int = Field(default=600, ge=1, le=30 * 86400)
    # Memory the per-agent search indexes of this process may take before the least
    # recently used are dropped (they reload from the table when next searched).
    search_index_memory_mb: int = Field(default=1024, ge=16)
    # The largest request body the service reads, in bytes; larger ones are refused (413)
    # before they are read.
    max_request_bytes: int = Field(default=1_048_576, ge=1024)
    # The largest file POST /agents/import reads (in place of MAX_REQUEST_BYTES for that
    # route only); it is spooled to a temporary file, never held in memory.
    max_import_bytes: int = Field(default=1024 * 1024 * 1024, ge=1024)

    # --- Embeddings (seed 002), see api/embeddings/factory.py ---------------------------
    # onnx: the shipped transformer (all-MiniLM-L6-v2, int8); static: the shipped static
    # model, fast but weak on paraphrase; local: sentence-transformers (the extra
    # agent-memory[local]); ollama, openai: a server; none: lexical search only.
    memory_embedding_backend: EmbeddingBackend = "onnx"
    # The backend's model (a name, or for onnx, static and local a path); unset: its default.
    memory_embedding_model: str | None = None
    ollama_base_url: AnyHttpUrl = AnyHttpUrl("http://localhost:11434")
    openai_api_key: SecretStr | None = None
    # Any OpenAI-compatible server; unset: OpenAI itself.
    openai_base_url: AnyHttpUrl | None = None
    # Whether the local backend may fetch a model from Hugging Face; never, unless true.
    memory_embedding_allow_download: bool = False

    # --- Seed 002's REST API (api/seed002/) ---------------------------------------------
    # POST /messages/search: results when the body gives no limit, and the most it may ask.
    memory_default_search_limit: int = Field(default=5, ge=1, le=1000)
    memory_max_search_limit: int = Field(default=20, ge=1, le=1000)
    # POST /context/{agent_name}: relevant messages at most (0: memory blocks only).
    memory_max_context_messages: int = Field(default=10, ge=0, le=1000)

    # --- Seed 004's memory runs (api/memory_runs/, docs/memory-layer.md) ----------------
    # local: in-process workers over the table; sqs: an SQS FIFO queue (several replicas).
    memory_queue: Literal["local", "sqs"] = "local"
    sqs_queue_url: str | None = None
    sqs_endpoint_url: AnyHttpUrl | None = None  # another SQS endpoint (tests, LocalStack)
    memory_workers: int = Field(default=2, ge=0, le=64)  # per process; 0: this one only accepts
    # How long POST /memory/add with wait_for_completion waits before answering 202.
    memory_run_wait_seconds: float = Field(default=60.0, ge=0, le=600)
    memory_run_attempts: int = Field(default=3, ge=1, le=20)  # before a run is failed
    # How long a worker's receive waits for a run (SQS long polling: at most 20).
    memory_queue_wait_seconds: float = Field(default=10.0, ge=0, le=20)

    # --- An agent's documents (api/documents/, docs/documents.md) -----------------------
    document_max_bytes: int = Field(default=10 * 2**20, ge=1024)  # one uploaded file
    document_max_pages: int = Field(default=500, ge=1)  # one PDF
    document_max_passages: int = Field(default=5000, ge=1)  # what one file may split into
    # Per process, at least one: its uploads wait in a queue of its own (api/documents/).
    document_workers: int = Field(default=1, ge=1, le=16)
    document_attempts: int = Field(default=3, ge=1, le=20)  # before processing is failed

    # --- Operations (docs/operations.md) -------------------------------------------------
    log_format: Literal["text", "json"] = "text"  # json: one JSON object a line
    # GET /metrics: off, loopback (peers on this machine), or token (METRICS_TOKEN as bearer).
    metrics: Literal["off", "loopback", "token"] = "loopback"
    metrics_token: SecretStr | None = None
    # OpenTelemetry traces (the extra `otel`): off, otlp (OTEL_EXPORTER_OTLP_*), console.
    tracing: Literal["off", "otlp", "console"] = "off"

    @property
    def private_provider_urls(self) -> bool:
        if self.allow_private_provider_urls is not None:
            return self.allow_private_provider_urls
        return self.auth_mode == "local"

    @property
    def server_identity_for_users(self) -> bool:
        """Whether a user's provider may run on the server's own cloud identity (an AWS
        role): only the one user of local mode may spend it."""
        return self.auth_mode == "local"

    @property
    def old_encryption_keys(self) -> list[str]:
        raw = self.encryption_old_keys.get_secret_value() if self.encryption_old_keys else ""
        return [key.strip() for key in raw.split(",") if key.strip()]

    @property
    def host_names(self) -> set[str]:
        return {h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip()}

    @property
    def frontend_origin(self) -> str:
        url = self.frontend_url
        port = f":{url.port}" if url.port and url.port not in (80, 443) else ""
        return f"{url.scheme}://{url.host}{port}"


class ConfigError(Exception):
    """A setting has a wrong value; the message names the variable."""


LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


def check_settings(settings: Settings) -> None:
    """Rules across variables, each failure naming the variables to change."""
    problems = []
    if settings.auth_mode == "google":
        secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else ""
        if len(secret) < 32:
            problems.append("JWT_SECRET: needs at least 32 characters when AUTH_MODE=google")
        if not settings.google_client_id:
            problems.append("GOOGLE_CLIENT_ID: required when AUTH_MODE=google")
        if not settings.google_client_secret:
            problems.append("GOOGLE_CLIENT_SECRET: required when AUTH_MODE=google")
        key = settings.encryption_key.get_secret_value() if settings.encryption_key else ""
        if len(key) < 32:
            problems.append("ENCRYPTION_KEY: needs at least 32 characters when AUTH_MODE=google")
        if not settings.cookie_secure:
            problems.append("COOKIE_SECURE: must stay true when AUTH_MODE=google")
        if settings.public_url is None:
            problems.append(
                "PUBLIC_URL: required when AUTH_MODE=google: the server's own address, which "
                "Google's sign-in returns to and the links it gives name (MCP's metadata, "
                "seed 004's dashboard_url); without it they would come from whatever Host "
                "a request claims"
            )
        url = settings.frontend_url
        if url.scheme != "https" and url.host not in LOOPBACK_HOSTS:
            problems.append("FRONTEND_URL: must be https when AUTH_MODE=google")
    elif settings.host not in LOOPBACK_HOSTS and not settings.allow_remote:
        problems.append(
            f"HOST: {settings.host} is not a loopback address; AUTH_MODE=local lets anyone who "
            "reaches the server act as the local user. Use AUTH_MODE=google, or set "
            "ALLOW_REMOTE=true if you really mean it"
        )
    if settings.encryption_key and len(settings.encryption_key.get_secret_value()) < 32:
        problems.append("ENCRYPTION_KEY: needs at least 32 characters")
    if any(len(k) < 32 for k in settings.old_encryption_keys):
        problems.append("ENCRYPTION_OLD_KEYS: every key needs at least 32 characters")
    if settings.memory_embedding_backend == "openai" and not settings.openai_api_key:
        problems.append("OPENAI_API_KEY: required when MEMORY_EMBEDDING_BACKEND=openai")
    if settings.memory_default_search_limit > settings.memory_max_search_limit:
        problems.append(
            "MEMORY_DEFAULT_SEARCH_LIMIT: may not exceed MEMORY_MAX_SEARCH_LIMIT "
            f"({settings.memory_default_search_limit} > {settings.memory_max_search_limit})"
        )
    if settings.memory_queue == "sqs" and not settings.sqs_queue_url:
        problems.append("SQS_QUEUE_URL: required when MEMORY_QUEUE=sqs")
    if settings.metrics == "token":
        token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
        if len(token) < 32:
            problems.append("METRICS_TOKEN: needs at least 32 characters when METRICS=token")
    if problems:
        raise ConfigError("Invalid configuration: " + "; ".join(problems))


def _variable(field: str) -> str:
    """The environment variables a setting is read from, as a person would type them."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info else None
    if isinstance(alias, AliasChoices):
        return " or ".join(str(choice).upper() for choice in alias.choices)
    return field.upper()


def load_settings() -> Settings:
    """Settings from the environment, or ConfigError naming every wrong variable."""
    try:
        settings = Settings()
    except ValidationError as e:
        problems = []
        for error in e.errors():
            variable = _variable("_".join(str(part) for part in error["loc"][:1]))
            given = error.get("input")
            shown = f" (got {given!r})" if isinstance(given, str | int) else ""
            problems.append(f"{variable}: {error['msg']}{shown}")
        raise ConfigError("Invalid configuration: " + "; ".join(problems)) from e
    check_settings(settings)
    return settings
