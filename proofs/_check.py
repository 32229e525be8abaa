r"""The contract of a proof-check script.

A script in ``proofs/`` registers one claim with :func:`claim`.  The decorated function receives
a :class:`Report`, checks the claim by (at least) two independent routes, records what it checked
with :meth:`Report.ok`, and records any statement that does not hold *as printed in the paper*
with :meth:`Report.finding` (a finding is reported, it is not a failure: the derivation is what
passes or fails).  :meth:`Report.require` raises :class:`CheckFailed`, which fails the claim.

Run one script with ``python -m proofs.<name>``; run all with ``python -m proofs`` or ``lintf verify``.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field


class CheckFailed(AssertionError):
    """A claim did not hold."""


@dataclass
class Report:
    """What one claim checked (``lines``) and where the printed paper disagrees (``findings``)."""

    lines: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    def ok(self, message: str) -> None:
        self.lines.append(message)

    def finding(self, message: str) -> None:
        self.findings.append(message)

    def require(self, condition: object, message: str) -> None:
        if not condition:
            raise CheckFailed(message)
        self.lines.append(message)


@dataclass
class Result:
    claim: str
    ref: str
    routes: list[str]
    status: str
    seconds: float
    module: str
    lines: list[str]
    findings: list[str]
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Claim:
    """A registered claim: its text, the paper reference, the routes used and the check."""

    claim: str
    ref: str
    routes: tuple[str, ...]
    fn: Callable[[Report], None]
    module: str

    def run(self) -> Result:
        report = Report()
        t0 = time.perf_counter()
        status, error = "pass", None
        try:
            self.fn(report)
        except Exception as exc:  # a failing check must never crash the table
            status = "fail"
            error = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, CheckFailed):
                error += "\n" + traceback.format_exc(limit=4)
        seconds = time.perf_counter() - t0
        return Result(
            self.claim,
            self.ref,
            list(self.routes),
            status,
            seconds,
            self.module,
            report.lines,
            report.findings,
            error,
        )

    def main(self) -> int:
        """Entry point of ``python -m proofs.<name>``: print what was checked, exit 1 on failure."""
        result = self.run()
        print(
            f"[{result.status.upper()}] {result.claim} ({result.ref}; routes: {', '.join(result.routes)}) "
            f"in {result.seconds:.2f}s"
        )
        for line in result.lines:
            print(f"  checked: {line}")
        for line in result.findings:
            print(f"  FINDING vs printed paper: {line}")
        if result.error:
            print(f"  error: {result.error}", file=sys.stderr)
        return 0 if result.status == "pass" else 1


REGISTRY: list[Claim] = []


def claim(
    text: str, *, ref: str, routes: tuple[str, ...]
) -> Callable[[Callable[[Report], None]], Claim]:
    """Register the decorated function as the check of one paper claim."""

    def wrap(fn: Callable[[Report], None]) -> Claim:
        c = Claim(text, ref, routes, fn, fn.__module__)
        REGISTRY.append(c)
        return c

    return wrap
