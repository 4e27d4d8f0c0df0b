"""p-free as busy.py plays it: 50 attempts, each a chain u a u a u a u j of 100 ms answers, each
participant on its own key with no limit, each key pacing its sends by an opening (the second send
``gap`` after the first, each next one ``step`` times sooner: bare_floor.py's opening). Prints the
run's wall against full concurrency's 0.8 s (busy.py's target: within 2x, 1.6 s)."""

import heapq
import itertools

CHAIN = "uauauauj"


def wall(
    gap: float, step: float, attempts: int = 50, latency: float = 0.1, chain: str = CHAIN, shared: bool = False
) -> float:
    keys = {}
    # each key: [next allowed send, current gap, sends so far]
    ready = [(0.0, a, 0) for a in range(attempts)]  # (time the request is ready, attempt, index in chain)
    heapq.heapify(ready)
    end = 0.0
    while ready:
        t, a, i = heapq.heappop(ready)
        key = "one" if shared else chain[i]
        state = keys.setdefault(key, [0.0, gap, 0])
        send = max(t, state[0])
        if send > t:  # not yet: back in the queue at the time it may go (FIFO by ready time kept by ties)
            heapq.heappush(ready, (send, a, i))
            continue
        state[2] += 1
        state[0] = send + (state[1] if state[2] >= 1 else 0)
        state[1] /= step
        done = send + latency
        if i + 1 < len(chain):
            heapq.heappush(ready, (done, a, i + 1))
        end = max(end, done)
    return end


def opening_time(gap, step, waiting=50):
    return sum(gap / step**k for k in range(waiting - 1))


if __name__ == "__main__":
    for gap, step in itertools.product(
        (0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5), (1.02, 1.05, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0)
    ):
        w = wall(gap, step)
        print(
            f"gap {gap:5.2f} step {step:4.2f}: opening(50) {opening_time(gap, step):6.2f} s  p-free wall {w:5.2f} s = {w / 0.8:4.2f}x chain {'OK' if w <= 1.6 else ''}"
        )
