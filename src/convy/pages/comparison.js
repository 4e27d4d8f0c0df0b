/* convy: two runs compared. Draws the ComparisonView embedded in #data: whether the change is
   real or within noise, scenarios worse / better / same, claims that flipped, and one attempt of
   each run side by side, turn by turn, in the window (the pairs in #pairs are read and inflated
   only when the window opens). Search and the open scenario live in the URL's hash. */

(() => {
  const { h, fmt, tile, facts, hash } = Convy;
  const view = Convy.json("data");
  const app = document.getElementById("app");
  const base = view.base;
  const candidate = view.candidate;
  const pairs = Scene.packed("pairs");
  const changes = new Map(view.scenarios.map((one) => [one.id, one]));

  const CHANGE = {
    worse: ["▼", "worse"],
    better: ["▲", "better"],
    same: ["=", "same"],
    undecided: ["?", "undecided"],
  };
  const state = { q: "", s: "", all: "" };

  function change(code, asBadge) {
    const pair = CHANGE[code] || ["?", code];
    return h("span", { class: (asBadge ? "badge " : "") + "st st-" + code }, pair[0] + " " + pair[1]);
  }

  /* Lower is better: Python says lower, higher or same (within its tolerance); drawn as better,
     worse or same. */
  const DIRECTION = {
    lower: ["better", "▼ lower"],
    higher: ["worse", "▲ higher"],
    same: ["same", "= same"],
  };
  function ratio(value, direction) {
    if (value === null || value === undefined || !DIRECTION[direction]) return h("span", { class: "muted" }, "no ratio per attempt");
    const [code, said] = DIRECTION[direction];
    return h("span", { class: "st st-" + code, title: "“same” within ±" + fmt.pct(view.tolerance, 0) }, said + " " + fmt.ratio(value) + " per attempt");
  }

  function versus(before, after) {
    return h("span", null, h("span", { class: "value" }, before), h("span", { class: "muted" }, " → "), h("span", { class: "value" }, after));
  }

  function header() {
    const sideFacts = (label, side) => h("div", { class: "side" },
      h("div", { class: "side-label" }, label),
      h("div", { class: "side-name" }, h("a", { href: side.href }, Convy.idText(side.agent + " · " + side.run))),
      side.name ? h("div", { class: "run-name" }, side.name) : null,
      facts([
        ["status", Convy.status("run", side.status, true)],
        ["started", fmt.date(side.started)],
        ["attempts", fmt.int(side.attempts)],
      ]));
    const top = h("header", { class: "top" },
      h("div", null,
        h("h1", null, h("span", { class: "brand" }, "convy · compare · "), Convy.idText(base.run + " → " + candidate.run)),
        base.name || candidate.name ? h("p", { class: "run-name", id: "run-names" }, (base.name || base.run) + " → " + (candidate.name || candidate.run)) : null,
        h("div", { class: "sides" }, sideFacts("before (base)", base), h("div", { class: "arrow", "aria-hidden": "true" }, "→"), sideFacts("after (candidate)", candidate))),
      h("div", { class: "top-actions" }, Convy.theme.button()));
    const notes = [];
    if (view.banner.length) {
      notes.push(h("div", { class: "notice bad", role: "alert", id: "banner" },
        h("strong", null, "⚠ These runs are not comparable as they stand"),
        h("ul", null, view.banner.map((line) => h("li", null, line)))));
    }
    if (view.notes.length) {
      notes.push(h("div", { class: "notice", id: "notes" }, h("ul", null, view.notes.map((line) => h("li", null, line)))));
    }
    const same = view.same_dialogues;
    if (same) {
      notes.push(h("div", { class: "notice", id: "same-dialogues" },
        h("strong", null, "The same dialogues, judged again"),
        h("p", null, same.said),
        h("p", null, "Attempts paired by (scenario, attempt): " + fmt.int(same.paired) + "; " + fmt.int(same.worse) +
          " passed before and fail now, " + fmt.int(same.better) + " failed before and pass now, " + fmt.int(same.other) +
          " changed to or from not judged.")));
    }
    const seq = view.sequential;
    if (seq) {
      notes.push(h("div", { class: "notice", id: "sequential" },
        h("strong", null, seq.applies
          ? "Played until decided: the anytime-valid verdict leads, the fixed-design test only describes"
          : "The sequential verdict does not apply to this pair"),
        h("p", null, seq.note)));
    }
    const apart = [
      ["only in the base run", view.only_base],
      ["only in the candidate run", view.only_candidate],
      ["changed between the runs", view.changed],
    ].filter(([, list]) => list.length);
    if (apart.length) {
      notes.push(h("div", { class: "notice", id: "apart" },
        h("strong", null, "Scenarios left out of every test"),
        h("ul", null, apart.map(([label, list]) => h("li", null, label + ": ", list.map((id, i) => [i ? ", " : "", h("code", null, id)]))))));
    }
    return [top, notes];
  }

  /* An e-value as the run's report says it: one decimal once it is 10 or more. */
  function evalue(e) {
    return e >= 10 ? e.toFixed(1) : e.toFixed(2);
  }

  /* The anytime-valid verdict of a pair one of which was played against the other until decided
     (comparison.PlayedAgainst): it leads, and the fixed-design tile after it only describes. */
  function sequentialTile(seq) {
    const decided = seq.verdict !== "undecided";
    return h("div", { class: "tile verdict sequential " + (decided ? "real" : "noise"), id: "sequential-verdict" },
      h("h2", null, "Change · anytime-valid verdict"),
      h("div", { class: "big " + (decided ? "st-" + seq.verdict : "st-noise") }, decided ? CHANGE[seq.verdict].join(" ") : "~ no verdict"),
      h("div", { class: "line" }, decided ? change(seq.verdict, true) : h("span", { class: "badge st st-noise" }, "~ undecided"),
        decided ? h("span", null, " — a real change") : h("span", { class: "muted" }, " — not shown to be a real change")),
      h("div", { class: "line", id: "sequential-e" }, "e = " + evalue(seq.e) + (decided ? " ≥ " : " < ") + fmt.int(seq.threshold) + " = 1/α (α = " + seq.alpha + ")"),
      h("div", { class: "line muted" }, "after " + fmt.int(seq.attempts) + " judged attempts of the " + seq.played + " run"),
      h("div", { class: "line reading", id: "sequential-said" }, seq.said));
  }

  function tiles() {
    const seq = view.sequential && view.sequential.applies ? view.sequential : null;
    const apart = view.banner.length > 0;
    const verdict = apart
      ? h("span", { class: "badge st st-noise", id: "no-verdict" }, "– no verdict: not comparable")
      : view.real
        ? change(view.verdict, true)
        : h("span", { class: "badge st st-noise" }, "~ within noise");
    return h("section", { class: "tiles versus", "aria-label": "Summary" },
      tile("Pass rate", versus(base.rate ? fmt.pct(base.rate.estimate) : "—", candidate.rate ? fmt.pct(candidate.rate.estimate) : "—"),
        h("span", { class: "muted" }, "before " + fmt.span(base.rate) + " · " + fmt.int(base.passed) + "/" + fmt.int(base.judged)),
        h("span", { class: "muted" }, "after " + fmt.span(candidate.rate) + " · " + fmt.int(candidate.passed) + "/" + fmt.int(candidate.judged))),
      seq ? sequentialTile(seq) : null,
      h("div", { class: "tile verdict " + (seq ? "fixed-only" : view.real ? "real" : "noise"), id: "fixed-verdict" },
        h("h2", null, seq ? "Fixed-design test · description only" : "Change"),
        h("div", { class: "big " + (view.real ? "st-" + view.verdict : "st-noise") }, (view.real ? "" : "~ ") + fmt.points(view.delta ? view.delta.estimate : null)),
        seq
          ? h("div", { class: "line" }, h("span", { class: "badge st st-flaky" }, "! not valid for a verdict"), h("span", { class: "muted" }, " — this test alone says " + (view.real ? CHANGE[view.verdict][1] : "within noise")))
          : h("div", { class: "line" }, verdict, apart ? null : view.real ? h("span", null, " — a real change") : h("span", { class: "muted" }, " — not a real change")),
        h("div", { class: "line muted" }, view.delta ? "95% CI " + fmt.points(view.delta.low) + " to " + fmt.points(view.delta.high) : "no interval"),
        h("div", { class: "line muted", id: "tested" }, (view.method === "mcnemar" ? "paired (McNemar, exact): " + fmt.pIs(view.p) : fmt.pIs(view.p) + " (" + view.method + ")") + " · sign-flip " + fmt.pIs(view.sign_flip_p)),
        seq ? h("div", { class: "line muted", id: "fixed-caveat" }, seq.fixed) : h("div", { class: "line reading" }, view.reading)),
      tile("Smallest detectable change", view.mde === null ? "—" : fmt.points(view.mde).replace(/^[+±]/, ""),
        view.needed ? h("span", null, view.needed) : h("span", { class: "muted" }, view.mde === null ? "not enough judged attempts" : "the change seen is at least this large"),
        h("span", { class: "muted" }, "α = 0.05, power 0.8, on these scenarios and attempts")),
      causes(),
      tile("Tokens", versus(fmt.int(base.tokens), fmt.int(candidate.tokens)), ratio(view.token_ratio, view.token_direction), h("span", { class: "muted" }, "agent, user model and judge · lower is better")),
      tile("Cost", versus(fmt.cost(base.cost), fmt.cost(candidate.cost)), ratio(view.cost_ratio, view.cost_direction),
        h("span", { class: "muted" }, base.cost.complete && candidate.cost.complete ? "lower is better" : "incomplete: some requests unpriced")),
      tile("Time", versus(fmt.seconds(base.seconds), fmt.seconds(candidate.seconds)), ratio(view.time_ratio, view.time_direction), h("span", { class: "muted" }, "summed over attempts · lower is better")));
  }

  /* The attempts not passed by cause, before and after (causes.py), and what a change comes with. */
  function causes() {
    const total = (list) => list.reduce((sum, one) => sum + one.count, 0);
    const after = new Map(view.candidate_causes.map((one) => [one.cause, one]));
    return tile("Why not passed", versus(fmt.int(total(view.base_causes)), fmt.int(total(view.candidate_causes))),
      h("ul", { id: "causes" }, view.base_causes.map((one) => h("li", { "data-cause": one.cause },
        Convy.word("cause", one.cause) + ": " + fmt.int(one.count) + " → " + fmt.int(after.get(one.cause).count)))),
      view.trouble.length
        ? h("div", { id: "trouble" }, view.trouble.map((sentence) => h("div", { class: "st st-flaky" }, "! " + sentence)))
        : h("span", { class: "muted" }, "failed or not judged, on the scenarios compared"));
  }

  /* Scenarios, grouped by their change. */

  const search = h("input", { type: "search", id: "search", placeholder: Convy.placeholder("Search scenarios and claims"), "aria-label": "Search scenarios" });
  const groupsBox = h("div", { class: "groups" });
  const claimsBox = h("div", { class: "claims-box" });
  let visible = [];
  let cursor = -1;

  function rowFor(one) {
    const tr = h("tr", { class: "row", tabindex: "-1", "data-id": one.id },
      h("td", null, h("span", { class: "id" }, Convy.idText(one.id)), pairs.has(one.id) ? null : h("span", { class: "muted small" }, " (no attempts to show)")),
      h("td", { class: "num" }, fmt.int(one.before_passed) + "/" + fmt.int(one.before_judged)),
      h("td", { class: "num" }, fmt.int(one.after_passed) + "/" + fmt.int(one.after_judged)),
      h("td", { class: "num" }, fmt.p(one.p)),
      h("td", { class: "num" }, fmt.p(one.adjusted)),
      h("td", null, one.change === "undecided" ? h("span", { class: "badge st st-undecided" }, "? " + one.said) : change(one.change, true)),
      sequential ? h("td", { class: "anytime" }, one.sequential ? [change(one.sequential, true), h("span", { class: "muted small" }, " e = " + evalue(one.sequential_e))] : h("span", { class: "muted" }, "—")) : null);
    tr.addEventListener("click", () => open(one.id));
    tr.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        event.stopPropagation();
        open(one.id);
      }
    });
    return tr;
  }
  const sequential = view.sequential && view.sequential.applies ? view.sequential : null;
  const rows = new Map(view.scenarios.map((one) => [one.id, rowFor(one)]));

  function matches(text) {
    const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    return words.every((part) => text.toLowerCase().includes(part));
  }

  function drawGroups() {
    visible = [];
    const sections = ["worse", "better", "undecided", "same"].map((code) => {
      const members = view.scenarios.filter((one) => one.change === code && matches(one.id));
      const total = view.counts[code] || 0;
      const label = { worse: "Worse", better: "Better", undecided: "Undecided", same: "Same (within ±10 pts)" }[code];
      const body = h("tbody", null, members.map((one) => rows.get(one.id)));
      visible.push(...members.map((one) => rows.get(one.id)));
      return h("section", { class: "group-" + code, id: "group-" + code },
        h("h2", null, h("span", { class: "st st-" + code }, CHANGE[code][0] + " " + label), " ", h("span", { class: "muted" }, "· " + (members.length === total ? total : members.length + " of " + total) + (total === 1 ? " scenario" : " scenarios"))),
        members.length
          ? h("div", { class: "table-wrap" }, h("table", { class: sequential ? "grid sequential" : "grid" },
            h("thead", null, h("tr", null,
              h("th", { scope: "col" }, "Scenario"),
              h("th", { scope: "col", class: "num" }, "Before"),
              h("th", { scope: "col", class: "num" }, "After"),
              h("th", { scope: "col", class: "num" }, "p"),
              h("th", { scope: "col", class: "num" }, "adjusted p"),
              h("th", { scope: "col" }, sequential ? "Fixed-design" : "Change"),
              sequential ? h("th", { scope: "col" }, "Anytime-valid") : null)),
            body))
          : h("p", { class: "muted" }, total ? "None matches the search." : "None."));
    });
    const own = sequential ? sequential.counts : null;
    Convy.fill(groupsBox,
      sequential ? h("p", { class: "muted", id: "groups-note" },
        "Grouped by the fixed-design test of each scenario (Fisher, Benjamini–Hochberg): for description only, since the " + sequential.played +
        " run stopped early. Anytime-valid: each scenario's own e-value, decided by e-BH — " + fmt.int(own.worse) + " worse, " +
        fmt.int(own.better) + " better, " + fmt.int(own.same) + " same.") : null,
      h("p", { class: "muted", id: "scenarios-said" }, "Scenarios: " + view.scenarios_said),
      ...sections);
    if (visible.length && !visible.some((tr) => tr.tabIndex === 0)) visible[0].tabIndex = 0;
    mark();
  }

  function drawClaims() {
    const shown = view.claims.filter((one) => (state.all || one.flipped) && matches(one.scenario + " " + one.claim));
    const flipped = view.flipped;
    const toggle = h("button", { type: "button", "aria-pressed": state.all ? "true" : "false", onclick: () => { state.all = state.all ? "" : "1"; save(); drawClaims(); } },
      state.all ? "Show flipped claims only" : "Show every changed claim (" + view.claims.length + ")");
    const rate = (value) => (value === null || value === undefined ? "—" : fmt.pct(value, 0));
    const arrow = (one) => {
      if (one.change === "one_run") return h("span", { class: "st st-same" }, "– only one run decided it");
      return h("span", { class: "st st-" + one.change }, CHANGE[one.change][0] + " " + (one.flipped ? "flipped, " : "") + (one.change === "better" ? "holds more" : "holds less"));
    };
    Convy.fill(claimsBox,
      h("h2", null, "Claims that flipped ", h("span", { class: "muted" }, "· " + flipped + " crossed half their attempts")),
      h("div", { class: "controls" }, toggle),
      shown.length
        ? h("div", { class: "table-wrap" }, h("table", { class: "grid", id: "claims" },
          h("thead", null, h("tr", null,
            h("th", { scope: "col" }, "Scenario"), h("th", { scope: "col" }, "Claim"),
            h("th", { scope: "col", class: "num" }, "Held before"), h("th", { scope: "col", class: "num" }, "Held after"), h("th", { scope: "col" }, "Change"))),
          h("tbody", null, shown.map((one) => {
            const tr = h("tr", { class: pairs.has(one.scenario) ? "row" : null },
              h("td", null, h("span", { class: "id" }, one.scenario)), h("td", null, one.claim),
              h("td", { class: "num" }, rate(one.before)), h("td", { class: "num" }, rate(one.after)), h("td", null, arrow(one)));
            if (pairs.has(one.scenario)) tr.addEventListener("click", () => open(one.scenario));
            return tr;
          }))))
        : h("p", { class: "muted" }, view.claims.length ? "No claim flipped" + (state.q ? " that matches the search." : ".") : "No claim changed."));
  }

  function mark() {
    for (const tr of visible) tr.classList.toggle("current", tr.dataset.id === state.s);
  }

  /* The window: one attempt of each run, lined up turn by turn. */

  const win = Scene.frame(() => {
    const id = state.s;
    state.s = "";
    save();
    mark();
    const tr = rows.get(id);
    if (tr && visible.includes(tr)) {
      cursor = visible.indexOf(tr);
      tr.tabIndex = 0;
      tr.focus();
    }
  });

  function sideHead(label, side, d) {
    return h("div", { class: "side-head" }, label + ": " + side.run + (side.name ? " (" + side.name + ")" : ""),
      d ? h("span", { class: "small" }, " · attempt " + d.attempt + " ", Convy.status("attempt", d.status, true)) : null);
  }

  function open(id) {
    const one = changes.get(id);
    if (!pairs.has(id) && !one) return;
    state.s = id;
    save();
    mark();
    Convy.fill(win.title, h("span", null, id), one ? change(one.change, true) : null,
      one ? h("span", { class: "small muted" }, fmt.int(one.before_passed) + "/" + fmt.int(one.before_judged) + " → " + fmt.int(one.after_passed) + "/" + fmt.int(one.after_judged) + " · adjusted " + fmt.pIs(one.adjusted)) : null);
    const ids = visible.map((tr) => tr.dataset.id);
    const at = ids.indexOf(id);
    Convy.fill(win.tools,
      h("button", { type: "button", title: "Previous scenario (k)", disabled: at <= 0 || null, onclick: () => neighbour(-1) }, "↑ previous"),
      h("button", { type: "button", title: "Next scenario (j)", disabled: at < 0 || at >= ids.length - 1 || null, onclick: () => neighbour(1) }, "↓ next"));
    Convy.fill(win.body, h("p", { class: "loading" }, "Loading the attempts…"));
    win.show();
    pairs.get(id).then((pair) => {
      if (state.s !== id) return;
      Convy.fill(win.body, ...lined(pair || null));
      for (const node of win.body.querySelectorAll("article.turn .turn-number")) node.remove();
    }, (error) => {
      Convy.fill(win.body, h("div", { class: "notice bad" }, h("strong", null, "The attempts could not be read"), String(error && error.message ? error.message : error)));
    });
  }

  /* One attempt of each run, lined up: decisions, then turn by turn, then the timelines. */
  function lined(pair) {
    const before = pair ? pair.before : null;
    const after = pair ? pair.after : null;
    const grid = h("div", { class: "pair", id: "pair" },
      sideHead("Before", base, before), sideHead("After", candidate, after));
    /* A cell says which run it is of (shown when the two columns stack, on a phone). */
    const cell = (side, node) => h("div", { class: "cell", "data-side": side }, h("div", { class: "cell-side" }, (side === "before" ? "Before · " + base.run : "After · " + candidate.run)), node);
    const nothing = (text) => h("p", { class: "nothing" }, text);
    grid.appendChild(h("div", { class: "row-label" }, "Decisions"));
    grid.appendChild(cell("before", before ? Scene.decisions(before.decisions) : nothing("No attempt in this run.")));
    grid.appendChild(cell("after", after ? Scene.decisions(after.decisions) : nothing("No attempt in this run.")));
    const stop = (d) => (d ? h("p", { class: "small muted" }, "stop: " + Convy.stopWord(d) + " · took " + fmt.seconds(d.seconds) + " · tokens " + fmt.tokens(d.tokens) + " · cost " + fmt.cost(d.cost)) : null);
    grid.appendChild(cell("before", stop(before)));
    grid.appendChild(cell("after", stop(after)));
    const turns = Math.max(before ? before.turns.length : 0, after ? after.turns.length : 0);
    for (let i = 0; i < turns; i++) {
      grid.appendChild(h("div", { class: "row-label" }, "Turn " + (i + 1)));
      for (const [side, d] of [["before", before], ["after", after]]) {
        grid.appendChild(cell(side, d && d.turns[i] ? Scene.turn(d.turns[i], i + 1) : nothing(d ? "No turn " + (i + 1) + " in this attempt." : "")));
      }
    }
    return [
      pair ? null : h("p", { class: "muted" }, "No attempts of this scenario to show."),
      grid,
      pair ? h("details", { class: "timelines" }, h("summary", null, "Timelines"),
        h("div", { class: "pair" },
          cell("before", before ? Scene.timeline(before) : nothing("—")), cell("after", after ? Scene.timeline(after) : nothing("—")))) : null,
    ];
  }

  function neighbour(step) {
    const ids = visible.map((tr) => tr.dataset.id);
    const next = ids[ids.indexOf(state.s) + step];
    if (next !== undefined) open(next);
  }

  function move(step) {
    if (win.isOpen()) {
      neighbour(step);
      return;
    }
    if (!visible.length) return;
    cursor = Convy.stepped(visible, cursor, step);
    Convy.focusRow(visible, cursor);
  }

  function save() {
    hash.write({ q: state.q, all: state.all, s: state.s });
  }

  function load() {
    const read = hash.read();
    state.q = read.q || "";
    state.all = read.all ? "1" : "";
    search.value = state.q;
    drawGroups();
    drawClaims();
    if (read.s && (pairs.has(read.s) || changes.has(read.s))) open(read.s);
    else if (win.isOpen()) win.close();
  }

  search.addEventListener("input", () => {
    state.q = search.value;
    save();
    drawGroups();
    drawClaims();
  });

  Convy.fill(app,
    ...header().flat(),
    tiles(),
    Labels.judges(view.judges, base.run, candidate.run),
    h("div", { class: "controls" }, search, h("span", { class: "count muted" }, fmt.int(view.scenarios.length) + " scenarios compared")),
    Convy.keyHelp([["/", "search"], ["j k ↑ ↓", "move"], ["Enter", "open side by side"], ["Esc", "close"], ["t", "theme"]]),
    groupsBox,
    h("section", { class: "claims-section" }, claimsBox),
    h("footer", { class: "foot" }, "Made by convy. Everything on this page is in this one file; it asks nothing of the network."));

  Convy.keys({ search: () => { win.close(); search.focus(); search.select(); }, move, open: () => { if (!win.isOpen() && visible[cursor]) open(visible[cursor].dataset.id); } });
  window.addEventListener("hashchange", load);
  load();
})();
