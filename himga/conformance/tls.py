"""The kit's TLS: the ssl.SSLContext of the HTTP port (what a `ClientTls` trusts, and the
client certificate it presents), and, when a port does not answer, what is wrong between the
kit's TLS and the server's, found by a TLS handshake of its own: TLS against a plaintext port,
plaintext against a TLS port, a server certificate the kit does not trust, or a client
certificate the server refuses. Each is said in one line, naming the options that fix it."""

import socket
import ssl
import urllib.parse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from himga.client.channels import ClientTls

_ANSWER_WAIT = 1.0
"""Seconds a probe waits, after its handshake, for the server to refuse its certificate (a TLS
1.3 server does so after the handshake, by closing the connection) or to speak."""


def ssl_context(tls: "ClientTls | None") -> ssl.SSLContext:
    """A client's SSLContext trusting `tls.ca` (None: the system's roots) and presenting
    `tls.cert` with `tls.key` when given; ValueError naming a file that cannot be read."""
    from himga.client.channels import read_pem

    ca = read_pem(tls.ca, "CA certificate") if tls is not None else None
    try:
        context = ssl.create_default_context(cadata=ca.decode("ascii") if ca else None)
    except (ssl.SSLError, ValueError) as error:
        assert tls is not None
        raise ValueError(f"cannot read the CA certificate {tls.ca}: {error}") from None
    if tls is not None and tls.cert is not None:
        try:
            context.load_cert_chain(tls.cert, tls.key)
        except (OSError, ssl.SSLError) as error:
            said = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise ValueError(
                f"cannot read the TLS certificate {tls.cert} with its key {tls.key}: {said}"
            ) from None
    return context


def address_of(where: str) -> tuple[str, int] | None:
    """The host and port of a target (HOST:PORT, [V6]:PORT) or of a URL; None for one of
    neither form."""
    try:
        parts = urllib.parse.urlsplit(where if "//" in where else f"//{where}")
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    if parts.hostname is None or port is None:
        return None
    return parts.hostname, port


def mismatch(
    where: str, tls: "ClientTls | None", secure: bool, timeout: float, http: bool = False
) -> str | None:
    """What is wrong between the kit's TLS and the server at `where` (a target, or with `http`
    the URL of an HTTP port), found by a handshake of the kit's own, `secure` (with what `tls`
    trusts and presents) or plaintext. None when nothing answers there, or nothing is wrong
    with TLS."""
    address = address_of(where)
    if address is None:
        return None
    try:
        connection = socket.create_connection(address, timeout=timeout)
    except OSError:
        return None  # nothing listens: the caller says so
    with connection:
        if not secure:
            return _plaintext_against(connection, address, where, http)
        return _tls_against(connection, address, where, tls, http)


def http2_only(url: str, tls: "ClientTls | None", timeout: float) -> bool:
    """Whether the TLS server at `url` closes a connection that offers HTTP/1.1 alone (by
    ALPN), as a gRPC port does: it speaks HTTP/2 only."""
    address = address_of(url)
    if address is None:
        return False
    context = ssl_context(tls)
    context.set_alpn_protocols(["http/1.1"])
    server_name = tls.server_name if tls is not None and tls.server_name else address[0]
    try:
        with (
            socket.create_connection(address, timeout=timeout) as connection,
            context.wrap_socket(connection, server_hostname=server_name) as secured,
        ):
            secured.settimeout(_ANSWER_WAIT)
            return secured.recv(1) == b""
    except TimeoutError:
        return False  # it waits for an HTTP/1.1 request
    except OSError:  # ssl.SSLError included: a refused ALPN is an alert
        return True


def _plaintext_against(
    connection: socket.socket, address: tuple[str, int], where: str, http: bool
) -> str | None:
    """What a plaintext kit is told by a TLS handshake that trusts anything: that the server
    at `where` speaks TLS, or nothing."""
    probe = ssl.create_default_context()
    probe.check_hostname = False
    probe.verify_mode = ssl.CERT_NONE
    try:
        probe.wrap_socket(connection, server_hostname=address[0]).close()
    except ssl.SSLError as error:
        if "ALERT" not in (error.reason or ""):  # an alert is a TLS server's refusal
            return None
    except OSError:
        return None
    if http:
        https = urllib.parse.urlsplit(where)._replace(scheme="https").geturl()
        return (
            f"no plaintext HTTP server answers at {where}: a TLS server does; give --http "
            f"{https} and --tls-ca PEM (the CA of its certificate; with --tls-cert PEM --tls-key "
            f"PEM for mutual TLS)"
        )
    return (
        f"no plaintext gRPC server answers at {where}: a TLS server does; give "
        f"--tls-ca PEM (the CA of its certificate; with --tls-cert PEM --tls-key PEM for "
        f"mutual TLS)"
    )


def _tls_against(
    connection: socket.socket,
    address: tuple[str, int],
    where: str,
    tls: "ClientTls | None",
    http: bool,
) -> str | None:
    """What a TLS kit is told by its own handshake with the server at `where`."""
    context = ssl_context(tls)
    context.set_alpn_protocols(["h2", "http/1.1"] if http else ["h2"])  # gRPC takes h2 alone
    server_name = tls.server_name if tls is not None and tls.server_name else address[0]
    netloc = urllib.parse.urlsplit(where).netloc if http else where
    plaintext = f"no TLS server answers at {where}: " + (
        f"give a plaintext HTTP port as --http http://{netloc}"
        if http
        else "drop --tls-ca, --tls-cert and --tls-key for a plaintext port"
    )
    try:
        secured = context.wrap_socket(connection, server_hostname=server_name)
    except ssl.SSLCertVerificationError as error:
        return _untrusted(where, tls, error.verify_message)
    except ssl.SSLEOFError:
        return f"{plaintext} (it closed the connection at the TLS handshake)"
    except ssl.SSLError as error:
        if "ALERT" in (error.reason or ""):
            return _refused(where, tls, error.reason)
        return f"{plaintext} (its answer to the TLS handshake is not TLS: {error.reason})"
    except OSError as error:
        return f"{plaintext} (it closed the connection at the TLS handshake: {error})"
    with secured:
        secured.settimeout(_ANSWER_WAIT)
        try:
            spoke = secured.recv(1)
        except ssl.SSLError as error:
            return _refused(where, tls, error.reason)
        except TimeoutError:
            return None  # it waits for the client to speak: nothing refused
        except OSError as error:
            return _refused(where, tls, str(error))
    return None if spoke else _refused(where, tls, "it closed the connection")


def _untrusted(where: str, tls: "ClientTls | None", seen: str | None) -> str:
    if "mismatch" in (seen or ""):  # "Hostname mismatch", "IP address mismatch"
        fix = "reach it by a name its certificate holds"
    else:
        ca = f"--tls-ca {tls.ca}" if tls is not None and tls.ca else "the system's CAs"
        fix = f"give --tls-ca PEM, the CA that signed it (trusted: {ca})"
    return f"the TLS server at {where} has a certificate the kit does not trust ({seen}): {fix}"


def _refused(where: str, tls: "ClientTls | None", reason: str | None) -> str:
    cert = tls.cert if tls is not None else None
    said = f"the certificate --tls-cert {cert}" if cert else "no client certificate"
    return (
        f"the TLS server at {where} refused the kit's handshake, with {said} ({reason}): give "
        f"--tls-cert PEM --tls-key PEM, a client certificate from the CA it trusts"
    )
