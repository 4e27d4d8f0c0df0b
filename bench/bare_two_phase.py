"""Two-phase openings (coarse then fine, or fine then coarse) with bare_search's search after refusals."""

import heapq
import itertools
import sys

from bare_floor import Played


def seq(g0, s1, switch, s2, n=400):
    out, g = [], g0
    for _ in range(n):
        out.append(g)
        g = g / (s1 if g > switch else s2)
    return out


def pfree_wall(gaps, attempts=50, latency=0.1, chain="uauauauj"):
    keys = {}
    ready = [(0.0, a, 0) for a in range(attempts)]
    heapq.heapify(ready)
    end = 0.0
    while ready:
        t, a, i = heapq.heappop(ready)
        st = keys.setdefault(chain[i], [0.0, 0])
        send = max(t, st[0])
        if send > t:
            heapq.heappush(ready, (send, a, i))
            continue
        st[0] = send + (gaps[st[1]] if st[1] < len(gaps) else 0.0)
        st[1] += 1
        if i + 1 < len(chain):
            heapq.heappush(ready, (send + latency, a, i + 1))
        end = max(end, send + latency)
    return end


def played(gaps, a1, a2, tol, rate, seconds=10.0, latency=0.1, least=5.0):
    requests = max(2, round(rate * seconds))
    unit = 1 / rate
    last, sent, refused = 0.0, 1, 0
    low, high = 0.0, 1 / least
    k = 0
    g = gaps[0]
    opening = True
    while sent < requests:
        if low < g < unit:
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
                k += 1
                g = gaps[k] if k < len(gaps) else g / 2
                continue
        if high / low <= tol:
            last += high * (requests - sent)
            break
        a = a1 if refused == 1 else a2
        g = low**a * high ** (1 - a)
    return Played(rate, last + latency, (requests - 1) / rate + latency, refused)


rates = [5.0 * 10 ** (i / 120) for i in range(121)]
limit = float(sys.argv[1]) if len(sys.argv) > 1 else 1.6
best = None
for g0, s1, switch, s2 in itertools.product(
    (0.05, 0.08, 0.12, 0.15, 0.2), (1.3, 1.5, 2.0, 3.0), (0.02, 0.03, 0.04, 0.06), (1.03, 1.05, 1.1, 1.2, 2.0)
):
    gaps = seq(g0, s1, switch, s2)
    if pfree_wall(gaps) > limit:
        continue
    for a1, a2, tol in itertools.product((0.03, 0.06, 0.1, 0.2), (0.005, 0.02), (1.05, 1.08, 1.12)):
        worst = max(p.wall / (p.floor + 1) for p in (played(gaps, a1, a2, tol, r) for r in rates))
        if best is None or worst < best[0]:
            best = (worst, (g0, s1, switch, s2, a1, a2, tol))
print(f"p-free within {limit} s: two-phase openings, best worst ratio to floor + 1 s: {best[0]:.3f}x {best[1]}")
