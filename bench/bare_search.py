"""A wider family than bench/bare_floor.py's, in the same model (bare_floor.played's rules: one key,
strict bucket of burst 1, every request waiting from the start, 100 ms answers, a refusal answered
at once and honoured by a whole second with nothing sent, the refused request let through after it).

The opening is bare_floor's (``gap``, each next send ``step`` times sooner until the first
refusal). After any refusal the client knows the limit's gap is in (low, high]; it then searches it:
while high/low > ``tol`` its next send is at low**a * high**(1-a) (a = ``a1`` after the first refusal,
``a2`` after later ones): let through, high falls to it; refused, low rises to it (and a second's
pause). Once high/low <= tol it holds high. a small: cautious descents, few refusals; a = 0.5: bisection.

    .venv/bin/python bench/bare_search.py SECONDS BUDGET [MOST_REFUSALS]   # e.g. 10 0.27, 10 pfree, 15 pfree
    WIDE=1 ...   # a1 up to 0.9 (a probe just above the gap refused), a2 up to 0.8, a third stretch

BUDGET: seconds the opening may take to send 50 requests with no limit (bare_floor's 0.27), or
``pfree``: any opening that keeps bare_pfree.py's three-key p-free within 1.6 s (PFREE=S to change).
Found (load 4-11, December 2026), worst ratio to the floor plus one second / plus two, 10 s floor:
bare_floor's family 1.181 / 1.083; this family 1.141 / 1.046 (0.27 s), 1.130 / 1.036 (pfree);
refused at most once 1.874 (0.27 s), 1.330 (pfree). 15 s floor: 1.108 (0.27 s), 1.095 (pfree);
20 s: 1.092, 1.077. bare_two_phase.py (coarse then fine openings): 1.126 at 10 s, pfree.
"""

import itertools
import sys

from bare_floor import Played
from bare_pfree import opening_time
from bare_pfree import wall as pfree_wall


def played(gap, step, a1, a2, tol, rate, seconds=10.0, latency=0.1, least=5.0, cap=99, a3=None):
    requests = max(2, round(rate * seconds))
    unit = 1 / rate
    last, sent, refused = 0.0, 1, 0
    low, high = 0.0, 1 / least
    g = gap
    opening = True
    while sent < requests:
        if g < unit and g > low:  # refused
            refused += 1
            low = g
            last += g + 1.0
            sent += 1
            opening = False
        else:
            last += g
            sent += 1
            high = min(high, g)
            if opening:
                g = g / step
                continue
        if opening:
            continue
        if high / low <= tol or refused >= cap:
            g = high
            last += g * (requests - sent)
            break
        a = a1 if refused == 1 else (a2 if refused == 2 or a3 is None else a3)
        g = low**a * high ** (1 - a)
    return Played(rate, last + latency, (requests - 1) / rate + latency, refused)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    budget = sys.argv[2] if len(sys.argv) > 2 else "0.27"
    cap = int(sys.argv[3]) if len(sys.argv) > 3 else 99
    rates = [5.0 * 10 ** (i / 120) for i in range(121)] + [5.0, 20.0, 50.0]
    best = {}
    openings = []
    for gap, step in itertools.product(
        (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.12, 0.15, 0.2), (1.05, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0)
    ):
        ok = (
            opening_time(gap, step, 50) <= float(budget)
            if budget != "pfree"
            else pfree_wall(gap, step) <= float(__import__("os").environ.get("PFREE", "1.6"))
        )
        if ok:
            openings.append((gap, step))
    import os

    wide = os.environ.get("WIDE")
    a1s = (0.03, 0.06, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9) if wide else (0.03, 0.06, 0.1, 0.15, 0.2, 0.3)
    a2s = (0.005, 0.02, 0.06, 0.2, 0.5, 0.8) if wide else (0.005, 0.01, 0.02, 0.04)
    a3s = (None, 0.005, 0.05, 0.3) if wide else (None,)
    tols = (1.03, 1.05, 1.08, 1.12, 1.17) if wide else (1.05, 1.08, 1.1, 1.13, 1.17, 1.22)
    for (gap, step), a1, a2, a3, tol in itertools.product(openings, a1s, a2s, a3s, tols):
        games = [played(gap, step, a1, a2, tol, r, seconds, cap=cap, a3=a3) for r in rates]
        for allowed in (1, 2):
            worst = max(game.wall / (game.floor + allowed) for game in games)
            if allowed not in best or worst < best[allowed][0]:
                best[allowed] = (worst, (gap, step, a1, a2, a3, tol), max(g.refused for g in games))
    print(f"seconds {seconds} opening budget {budget}, refusals planned at most {cap}: {len(openings)} openings")
    for allowed, (worst, client, most) in sorted(best.items()):
        print(
            f"  floor + {allowed} s: best worst ratio {worst:.3f}x, client (gap, step, a1, a2, a3, tol) = {client}, at most {most} refused"
        )


if __name__ == "__main__":
    main()
