"""Mask credentials embedded in URLs (a password, a lone user token, secret query values) before a URL is logged,
printed, stored or reported."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
_SECRET_QUERY_KEYS = frozenset(
    {"api_key", "api-key", "apikey", "key", "token", "access_token", "access-token", "accesstoken"}
    | {"password", "passwd", "secret", "sig", "signature"}
)
# scheme://userinfo@ inside free text (a comma-separated --judge list, an exception message, a log line)
_USERINFO_IN_TEXT = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s,]+)@")
# ?key=value or &key=value inside free text, for the keys above
_SECRET_PARAM_IN_TEXT = re.compile(
    rf"(?P<key>[?&](?:{'|'.join(map(re.escape, _SECRET_QUERY_KEYS))})=)(?P<value>[^&#\s'\"]+)", re.IGNORECASE
)


def mask_url(url: str) -> str:
    """The URL with any password (or lone user token) and secret query values replaced by `***`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_urls_in(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if sep else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(key.lower() in _SECRET_QUERY_KEYS for key, _ in pairs):
            query = urlencode([(k, MASK if k.lower() in _SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_urls_in(text: str) -> str:
    """Free text with every URL's password (or lone user token) and secret query values masked: for messages
    and log lines that quote one or more URLs."""
    if "://" not in text and "=" not in text:
        return text

    def repl(match: re.Match[str]) -> str:
        user, sep, _ = match.group("userinfo").partition(":")
        return f"{match.group('scheme')}{user}:{MASK}@" if sep else f"{match.group('scheme')}{MASK}@"

    text = _USERINFO_IN_TEXT.sub(repl, text)
    return _SECRET_PARAM_IN_TEXT.sub(lambda m: f"{m['key']}{MASK}", text)
