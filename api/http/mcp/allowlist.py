"""The Host and Origin values the MCP endpoint answers (the SDK's DNS-rebinding guard):
the server's own names (ALLOWED_HOSTS, as LocalModeGuard reads them), the public hosts of
a SaaS deployment (MCP_PUBLIC_HOSTS and PUBLIC_URL's host), each with any port or none."""

from dataclasses import dataclass

from api.config import Settings


@dataclass(frozen=True)
class Allowlist:
    hosts: list[str]  # as the SDK matches them: "name", "name:port" or "name:*"
    origins: list[str]


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name else name  # an IPv6 address, as a Host header spells it


def public_hosts(settings: Settings) -> set[str]:
    names = {h.strip().lower() for h in settings.mcp_public_hosts.split(",") if h.strip()}
    if settings.public_url is not None and settings.public_url.host:
        names.add(settings.public_url.host.lower())
    return names


def allowlist(settings: Settings) -> Allowlist:
    own = {_bracketed(name) for name in settings.host_names}
    public = {_bracketed(name) for name in public_hosts(settings)}
    hosts = sorted(own | public)
    origins = {settings.frontend_origin}
    for host in own:  # a local server is plain http, one behind a proxy https
        origins |= {
            f"{scheme}://{host}{port}" for scheme in ("http", "https") for port in ("", ":*")
        }
    for host in public:
        origins |= {f"https://{host}", f"https://{host}:*"}
    return Allowlist(
        hosts=[pattern for host in hosts for pattern in (host, f"{host}:*")],
        origins=sorted(origins),
    )
