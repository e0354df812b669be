"""Where a user-supplied URL may point. A base URL a user gives us is fetched by our
servers, so it must never reach link-local or cloud metadata addresses, and reaches private
or loopback networks only where that is configured (the local mode, a self-hosted model).
Checked after DNS resolution, on every address the name resolves to."""

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

from api.errors import AppError

# Cloud metadata and host services that are not already link-local.
METADATA = {
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("168.63.129.16"),  # Azure WireServer
}
SITE_LOCAL = ipaddress.ip_network("fec0::/10")  # deprecated, still routed privately
SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: private in practice


class UrlRefused(AppError):
    status_code = 400
    code = "url_refused"


def refusal(address: str, allow_private: bool) -> str | None:
    """Why `address` may not be reached, or None when it may."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        # IPv4 inside IPv6 (mapped, 6to4, Teredo) is the IPv4 address it carries.
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            ip = embedded
    if ip.is_multicast or ip.is_unspecified:
        return "an address that is not a server"
    if ip in METADATA or ip.is_link_local:
        return "a link-local or cloud metadata address"
    private = ip.is_private or ip.is_loopback or ip in SHARED or ip in SITE_LOCAL
    if private:  # before is_reserved, which also covers ::1
        return (
            None
            if allow_private
            else ("a private or loopback address, which this server does not allow")
        )
    if ip.is_reserved:
        return "an address that is not a server"
    return None


async def check_url(url: str, *, allow_private: bool) -> None:
    """Raise UrlRefused unless every address of the URL's host may be reached."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlRefused("The URL must be http or https, with a host.")
    if parts.username or parts.password or parts.query:
        # Such parts hold credentials, and a base URL is shown back to its owner.
        raise UrlRefused("Put credentials in their own fields, not in the URL.")
    try:  # an address needs no lookup (nor the thread hop of one)
        literal = ipaddress.ip_address(parts.hostname)
    except ValueError:
        pass
    else:
        why = refusal(str(literal), allow_private)
        if why is not None:
            raise UrlRefused(f"The host {parts.hostname} is {why}.")
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            parts.hostname,
            parts.port or (443 if parts.scheme == "https" else 80),
            type=socket.SOCK_STREAM,
        )
    except socket.gaierror as e:
        raise UrlRefused(f"The host {parts.hostname} cannot be resolved.") from e
    for info in infos:
        why = refusal(str(info[4][0]), allow_private)
        if why is not None:
            raise UrlRefused(f"The host {parts.hostname} resolves to {why}.")
