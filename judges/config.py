"""One OpenAI-compatible chat endpoint's configuration, built from the settings in one place.

`base_url` is always masked (`url_secrets.hide`); only the chat client's connection sees the credential. The
fields that can change a judge's scores (`scoring_params`) go into its config hash; the transport ones do not, so
replicas of one model are one series.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from judgewatch.settings import Settings
from judgewatch.url_secrets import hide, reveal

# The numeric fields' smallest allowed value, and whether that value itself is allowed.
_LOWER_BOUNDS: dict[str, tuple[float, bool]] = {
    "concurrency": (1, True),
    "max_retries": (0, True),
    "timeout_s": (0, False),
    "max_tokens": (1, True),
    "context_window": (1, True),
    "chars_per_token": (0, False),
}


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call one chat endpoint (the judge's, or a live serving tier's), and how it samples."""

    base_url: str
    model: str
    api_key: str = field(default="EMPTY", repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # sent with every request
    concurrency: int = 64
    timeout_s: float = 60.0
    max_retries: int = 2
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_tokens: int = 160
    seed: int | None = 1234
    temperature: float = 0.0
    # Context window: fit prompts to it; `context_window` and `chars_per_token` are the fallback estimate for
    # servers that do not report their window or count tokens (vLLM does both).
    fit_prompt: bool = True
    context_window: int = 4096
    chars_per_token: float = 3.0
    # Probability-weighted scores (judges.score_logprobs): ask for the `top_logprobs` most likely tokens at every
    # position of a verdict reply. vLLM serves at most its `--max-logprobs` (default 20) per position.
    logprobs: bool = False
    top_logprobs: int = 20
    # How the model is served, as the operator declares it (`judge_serving`: dtype, quantization, ...): sorted
    # (name, value) pairs, part of the configuration hash when any is declared.
    serving: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"endpoint base_url must be an http(s):// URL, got {self.base_url!r}")
        if not self.model:
            raise ValueError(f"endpoint {self.base_url}: the model name is empty")
        for name, (bound, inclusive) in _LOWER_BOUNDS.items():
            value = getattr(self, name)
            if value < bound or (value == bound and not inclusive):
                raise ValueError(f"{name} must be {'>=' if inclusive else '>'} {bound}, got {value}")
        if not 1 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be between 1 and 20, got {self.top_logprobs}")
        for name, value in self.serving:
            if not name.strip() or not str(value).strip():
                raise ValueError(f"judge_serving: every flag needs a name and a value, got {name!r}: {value!r}")
        object.__setattr__(self, "serving", tuple(sorted((str(k), str(v)) for k, v in self.serving)))
        # Where a URL enters: from here on it is carried masked; the chat client reveals it to connect.
        object.__setattr__(self, "base_url", hide(self.base_url).rstrip("/"))
        reveal(self.base_url)  # a masked URL whose credential this process lacks: refused here, in one line

    def with_changes(self, **changes: Any) -> EndpointConfig:
        """A copy with `changes` applied and checked again (e.g. a smaller `max_tokens` for short replies)."""
        return replace(self, **changes)

    def scoring_params(self) -> dict[str, object]:
        """The fields that can change what the model answers, for the configuration hash. Reading log-probabilities (the
        floats a verdict stores) or declared serving flags makes another judge; without them the hash is as it was."""
        params: dict[str, object] = {
            "model": self.model,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        if self.logprobs:
            params["top_logprobs"] = self.top_logprobs
        if self.serving:
            params["serving"] = dict(self.serving)
        return params


# The fields `judge_endpoint` takes from the settings as they are, each from `judge_<field>`
# (JUDGEWATCH_JUDGE_<FIELD>); the URL, model and concurrency have per-run overrides.
_FROM_SETTINGS = (
    "api_key", "timeout_s", "max_retries", "max_tokens", "seed", "fit_prompt", "context_window", "chars_per_token",
    "logprobs", "top_logprobs",
)  # fmt: skip


def judge_endpoint(
    settings: Settings, base_url: str | None = None, *, model: str | None = None, concurrency: int | None = None
) -> EndpointConfig:
    """The judge endpoint at `base_url` (default: the configured judge URL) as the settings configure it. `model` and
    `concurrency` are the CLI's per-run overrides; everything else comes from `JUDGEWATCH_JUDGE_*`."""
    return EndpointConfig(
        base_url=base_url or settings.judge_url,
        model=model or settings.judge_model,
        concurrency=concurrency or settings.judge_concurrency,
        serving=tuple(settings.judge_serving.items()),
        **{name: getattr(settings, f"judge_{name}") for name in _FROM_SETTINGS},
    )
