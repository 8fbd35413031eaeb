"""What became of the updates, per round: used, not used (late, stale, discarded, unread) or lost.

`netemu report`'s chart "Updates used, late and lost per round" is drawn from this, fed with
every record of the log in its one pass: per (algorithm, run, kind, round) the messages
delivered (first copies), lost (dropped or still in flight at the end) and the `unused`
records by reason.  A message's round is the round it was sent for (an update: the round
it answers).  Charted kinds: `update` (the built-in families' answers to the server) and every
kind with an `unused` record other than "unread" and "duplicate" (an algorithm judged it).
Used = delivered − unused (a duplicate is a second copy: not a message, not subtracted).
"""

from __future__ import annotations

from collections import Counter, defaultdict

__all__ = ["PARTS", "Usage"]

#: the stacked parts of a round's bar, in order
PARTS = ("used", "late", "stale", "discarded", "unread", "lost")
_CHARTED = "update"


class Usage:
    """Per (algorithm, run) and (kind, round): delivered, lost and unused counts."""

    def __init__(self) -> None:
        self.counts: dict[tuple, Counter] = defaultdict(Counter)  # (ctx, kind, round) -> part -> n
        self.judged: dict[str, set[str]] = defaultdict(set)  # algorithm -> kinds with a judged unused record

    def feed(self, ev: str, r: dict, ctx: tuple) -> None:
        """Count record `r` (event `ev`) of (algorithm, run) `ctx`."""
        if ev == "deliver":
            if r.get("duplicate") is not True:
                self.counts[(ctx, r["kind"], r["round"])]["delivered"] += 1
        elif ev in ("drop", "in_flight"):
            if r.get("duplicate") is not True:
                self.counts[(ctx, r["kind"], r["round"])]["lost"] += 1
        elif ev == "unused":
            reason = str(r["reason"])
            self.counts[(ctx, r["kind"], r["round"])][reason] += 1
            if reason not in ("unread", "duplicate"):
                self.judged[ctx[0]].add(r["kind"])

    def as_dict(self) -> dict[str, dict]:
        """Per algorithm: the charted kinds, the rounds, and per part of `PARTS` the mean over its
        runs of each round's count (a run without a message of that round counts 0)."""
        runs: dict[str, set] = defaultdict(set)
        for ctx, _kind, _rnd in self.counts:
            runs[ctx[0]].add(ctx)
        out = {}
        for alg, ctxs in sorted(runs.items(), key=lambda kv: str(kv[0])):
            kinds = sorted({_CHARTED} | self.judged.get(alg, set()), key=str)
            per_round: dict[int, Counter] = defaultdict(Counter)
            for (ctx, kind, rnd), c in self.counts.items():
                if ctx[0] == alg and kind in kinds:
                    per_round[rnd].update(c)
            if not per_round:
                continue
            rounds = sorted(per_round)
            n = len(ctxs)
            parts: dict[str, list[float]] = {p: [] for p in PARTS}
            for rnd in rounds:
                c = per_round[rnd]
                unused = sum(c[p] for p in PARTS[1:-1])
                for p in PARTS:
                    value = c["delivered"] - unused if p == "used" else c[p]
                    parts[p].append(value / n)
            out[str(alg)] = {"kinds": [str(k) for k in kinds], "runs": n, "round": rounds, **parts,
                             "duplicate": sum(c["duplicate"] for c in per_round.values()) / n}
        return out
