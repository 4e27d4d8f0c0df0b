/* convy: a run's report. Draws the RunView embedded in #data; the dialogues (#dialogues says
   which chunk holds each scenario) are read only when a window opens, a chunk of scenarios at a
   time. Filters, sort and the open scenario and attempt live in the URL's hash. */

(() => {
  const { h, fmt, status, word, tile, facts, hash } = Convy;
  const view = Convy.json("data");
  const packed = Scene.packed("dialogues");
  const app = document.getElementById("app");
  const scenarios = view.scenarios;
  const byId = new Map(scenarios.map((one) => [one.id, one]));
  Labels.begin(view.header.agent, view.header.run);
  const live = Convy.live(view.header.status === "running");

  const METHOD = {
    t: "t interval across scenarios, and the attempts' own noise",
    bootstrap: "bootstrap across scenarios, widened for few, and the attempts' own noise",
    exact: "exact interval, one scenario",
    none: "nothing judged",
  };
  const ORDER = { always: 0, flaky: 1, never: 2, not_judged: 3 };

  const state = { q: "", status: "", tag: "", variant: "", claim: "", cause: "", group: "", sort: "", dir: "", s: "", a: "" };

  /* Variants: each matrix key a dimension (report.Dimensions), each value with its pass rate.
     A filter is "key=value"; a group by a key is "variant:key". */
  const DIMENSIONS = view.variants || [];
  const VALUE = new Map(DIMENSIONS.flatMap((dim) => dim.values.map((one) => [dim.key + "=" + one.value, one])));
  const GROUPS = ["folder", "tag", ...DIMENSIONS.map((dim) => "variant:" + dim.key)];
  const CAUSES = ["agent", "user", "judge", "service", "tool"];
  /* Why attempts stopped, in words: with no simulated user, every turn was scripted, and an
     attempt that "finished" played its script out (no user said it was done). */
  const stopped = (code) => (code === "finished" && view.header.user_model === "absent" ? "script played out" : word("stop", code));

  /* Header. */

  function header() {
    const head = view.header;
    const none = (model, said) => (model === "absent" ? said : model);
    const top = h("header", { class: "top" },
      h("div", { class: "top-main" },
        h("h1", null, h("span", { class: "brand" }, "convy · "), Convy.idText(head.agent + " · " + head.run)),
        head.name ? h("p", { class: "run-name", id: "run-name" }, head.name) : null,
        facts([
          ["status", status("run", head.status, true)],
          ["pass rate", view.rate ? fmt.pct(view.rate.estimate) + " " + fmt.interval(view.rate) : "—"],
          ["started", fmt.date(head.started)],
          ["duration", fmt.seconds(head.seconds)],
        ]),
        /* The rest of the run's facts: open on a wide screen, a tap away on a phone, so that the
           first screen reaches the scenarios. */
        h("details", { class: "more-facts", open: Convy.NARROW ? null : "" },
          h("summary", null, "about this run"),
          facts([
            ["verdict", head.status === "running" ? "not yet: the run is playing" : head.verdict],
            ["attempts per scenario", head.adaptive || fmt.int(head.attempts)],
            ["kept", fmt.int(head.kept) + " of " + fmt.int(head.planned) + " planned"],
            ["user model", none(head.user_model, "none: every turn scripted")],
            ["judge", none(head.judge_model, "none: checks decided by code")],
            head.judge_model === "absent" ? null : ["judge trusted from confidence", head.trust ? fmt.pct(head.trust, 0) : "any"],
            ["scenario files", head.fingerprint || "—"],
            ["convy", head.convy || "—"],
          ]))),
      h("div", { class: "top-actions" }, Labels.tool(), Convy.theme.button()));
    /* Notices: what needs acting on leads, open; the rest are folded to their first line (a
       <details>), so that a long one cannot push the scenarios off the first screen. */
    const notes = [];
    const folded = (id, bad, title, ...body) => h("details", { class: "notice folded" + (bad ? " bad" : ""), id: id || null },
      h("summary", null, h("strong", null, title)), ...body);
    if (head.status === "running") notes.push(h("div", { class: "notice" + (live.stale ? " bad" : ""), id: "live" }, h("strong", null, "… This run is still playing"), "The report shows the attempts kept so far: " + fmt.int(head.kept) + " of " + fmt.int(head.planned) + " planned. " + live.words));
    if (head.stop) notes.push(folded(null, true, "■ This run was " + head.stop, fmt.int(head.kept) + " of " + fmt.int(head.planned) + " planned attempts were kept; `convy resume` with a larger budget plays the rest."));
    if (head.budget) notes.push(folded(null, false, "Within its budget", head.budget));
    if (head.reached) notes.push(folded(null, true, "■ This run " + head.reached.split(";")[0], "Every planned attempt was played, and what they spent reached the budget: convy exits 6."));
    if (head.against) notes.push(folded("against", false, "Played against run " + head.against_run, head.against));
    if (!head.tested && head.status !== "running") notes.push(h("div", { class: "notice bad", id: "verdict" }, h("strong", null, "– Nothing was tested"), "No attempt was judged" + (head.skipped.length ? " (" + fmt.int(head.skipped.length) + (head.skipped.length === 1 ? " scenario" : " scenarios") + " skipped, below)" : "") + ": this run shows nothing about the agent, and convy exits 7 for it."));
    else if (head.failing.length && head.status !== "running") {
      /* The scenarios that fail are the table's first rows: the notice names them, folded past
         the first few (or all of them, on a phone, past the first). */
      const first = Convy.NARROW ? 0 : 3;
      const line = (text) => h("li", null, text);
      const rest = head.failing.slice(first);
      notes.push(h("div", { class: "notice bad", id: "verdict" }, h("strong", null, "✗ " + head.verdict),
        first ? h("ul", { class: "failing" }, head.failing.slice(0, first).map(line)) : null,
        rest.length
          ? h("details", { class: "more-failing" }, h("summary", null, first ? fmt.int(rest.length) + " more" : "which, and why"), h("ul", { class: "failing" }, rest.map(line)))
          : null));
    }
    if (head.status === "interrupted") notes.push(h("div", { class: "notice bad" }, h("strong", null, "✗ This run was interrupted"), fmt.int(head.kept) + " of " + fmt.int(head.planned) + " planned attempts were kept; `convy resume` plays the rest."));
    if (head.broken) notes.push(folded(null, true, "✗ Unreadable attempts", fmt.int(head.broken) + " lines of attempts.jsonl could not be read and are left out."));
    if (head.skipped.length) {
      const groups = head.skip_groups && head.skip_groups.length ? head.skip_groups : head.skipped.map((line) => ({ reason: line, scenarios: [] }));
      notes.push(folded("skipped", false, fmt.int(head.skipped.length) + (head.skipped.length === 1 ? " scenario" : " scenarios") + " not played",
        h("ul", null, groups.map((group) => h("li", null,
          group.scenarios.length ? [h("strong", { class: "skip-count" }, fmt.int(group.scenarios.length) + (group.scenarios.length === 1 ? " scenario" : " scenarios") + " ("), group.scenarios.map((id, i) => [i ? ", " : "", h("span", { class: "id" }, Convy.idText(id))]), h("strong", { class: "skip-count" }, "): ")] : null,
          group.reason)))));
    }
    return [top, notes];
  }

  /* Tiles. */

  function tiles() {
    const notJudged = Object.entries(view.not_judged);
    const last = view.consistency.length ? view.consistency[view.consistency.length - 1] : null;
    const spend = (name, one) => h("li", null, h("strong", null, name + ": "), one.tokens.requests
      ? [fmt.tokens(one.tokens), h("span", { class: "muted" }, " · " + fmt.int(one.tokens.requests) + " requests · " + fmt.cost(one.cost))]
      : h("span", { class: "muted" }, "no requests reported"));
    const compact = (node) => { node.classList.add("compact"); return node; };
    return h("section", { class: "tiles summary", "aria-label": "Summary" },
      tile("Pass rate", view.rate ? fmt.pct(view.rate.estimate) : "—",
        h("span", null, fmt.interval(view.rate)),
        h("span", { class: "muted" }, METHOD[view.method] || view.method),
        h("span", null, fmt.int(view.passed) + " passed of " + fmt.int(view.judged) + " judged")),
      tile("Scenarios", fmt.int(scenarios.length),
        h("ul", null,
          h("li", null, h("span", { class: "st st-always" }, "✓ " + fmt.int(view.always) + " always pass")),
          h("li", null, h("span", { class: "st st-flaky" }, "~ " + fmt.int(view.flaky) + " flaky")),
          h("li", null, h("span", { class: "st st-never" }, "✗ " + fmt.int(view.never) + " never pass")))),
      causesTile(),
      tile("Not judged", fmt.int(view.not_judged_total),
        notJudged.length
          ? h("ul", null, notJudged.map(([why, count]) => h("li", null, "– " + fmt.int(count) + " " + word("why", why))))
          : h("span", { class: "muted" }, "every attempt was judged"),
        h("span", { class: "muted" }, "left out of the pass rate")),
      compact(tile("Agent tokens", view.agent.tokens.reported
        ? [h("span", { class: "value" }, fmt.int(view.agent.tokens.input) + " in"), " · ", h("span", { class: "value" }, fmt.int(view.agent.tokens.output) + " out")]
        : fmt.tokens(view.agent.tokens),
        h("span", { class: "muted" }, fmt.tokenNote(view.agent.tokens)),
        view.agent.per_request.count ? h("span", null, "per answer p50 " + fmt.int(view.agent.per_request.p50) + " · p95 " + fmt.int(view.agent.per_request.p95)) : null)),
      tile("Total cost", fmt.cost(view.cost),
        fmt.unpriced(view.cost)
          ? h("span", { class: "muted" }, fmt.costNote(view.cost))
          : h("span", { class: view.cost.complete ? "st st-passed" : "st st-flaky" }, (view.cost.complete ? "✓ " : "! ") + fmt.costNote(view.cost)),
        h("span", { class: "muted" }, "agent " + fmt.cost(view.agent.cost) + " · user " + fmt.cost(view.user.cost) + " · judge " + fmt.cost(view.judge.cost))),
      tile("Answer time", "p50 " + fmt.seconds(view.agent.seconds.p50),
        h("span", null, "p95 " + fmt.seconds(view.agent.seconds.p95) + " · max " + fmt.seconds(view.agent.seconds.max)),
        h("span", { class: "muted" }, "time spent: agent " + fmt.seconds(view.time.agent) + " · user " + fmt.seconds(view.time.user) + " · judge " + fmt.seconds(view.time.judge) + " · waiting " + fmt.seconds(view.time.waiting))),
      h("div", { class: "tile" },
        h("h2", null, "User model and judge"),
        h("ul", null, spend("user model", view.user), spend("judge", view.judge)),
        h("div", { class: "line muted" }, "apart from the agent's tokens")),
      h("div", { class: "tile compact" },
        h("h2", null, "Consistency"),
        last ? h("div", { class: "big" }, "pass^" + last.k + " " + fmt.pct(last.pass_hat)) : h("div", { class: "big" }, "—"),
        last ? h("div", { class: "line" }, "pass@" + last.k + " " + fmt.pct(last.pass_at)) : null,
        last ? h("div", { class: "line muted" }, "pass^k: all k attempts pass; pass@k: at least one does") : null,
        view.noise.advice ? h("div", { class: "line muted" }, "to narrow the interval: " + view.noise.advice) : null,
        view.noise.icc !== null ? h("div", { class: "line muted" }, "ICC " + view.noise.icc.toFixed(2)) : null),
      h("div", { class: "tile" },
        h("h2", null, "Stop reasons"),
        h("ul", null, Object.entries(view.stops).map(([stop, count]) => h("li", null, stopped(stop) + ": " + fmt.int(count))))));
  }

  /* Variants: a tile per matrix key, each value's pass rate with its interval, found in
     report.Dimensions as the run's rate is (across the variants that have the value). */

  function variants() {
    if (!DIMENSIONS.length) return null;
    return h("section", { class: "variants", id: "variants", "aria-label": "Variants" },
      h("h2", null, "Variants ", h("span", { class: "muted" }, "— pass rate by the value of each matrix key")),
      h("div", { class: "tiles" }, DIMENSIONS.map((dim) => h("div", { class: "tile wide variant-dimension", "data-key": dim.key },
        h("h2", null, dim.key),
        h("table", { class: "grid variant-values" },
          h("thead", null, h("tr", null,
            h("th", { scope: "col" }, "value"),
            h("th", { scope: "col", class: "num" }, "pass rate"),
            h("th", { scope: "col", class: "num" }, "95% interval"),
            h("th", { scope: "col", class: "num", title: "attempts passed of judged, over the variants with this value" }, "passed"))),
          h("tbody", null, dim.values.map((one) => h("tr", { "data-value": one.value },
            h("th", { scope: "row" }, h("button", { type: "button", class: "variant-filter", title: "show only " + dim.key + "=" + one.value,
              onclick: () => { state.variant = dim.key + "=" + one.value; variantSelect.value = state.variant; update(); } }, one.value)),
            h("td", { class: "num rate" }, one.rate ? fmt.pct(one.rate.estimate, 0) : "—"),
            h("td", { class: "num interval", title: METHOD[one.method] || one.method }, one.rate ? fmt.span(one.rate) : "—"),
            h("td", { class: "num", title: fmt.int(one.variants) + (one.variants === 1 ? " variant" : " variants") }, fmt.int(one.passed) + "/" + fmt.int(one.judged))))))))));
  }

  /* Why attempts did not pass, by cause (causes.py): each cause a button that filters the
     scenarios by it. */
  function causesTile() {
    const list = h("ul", { id: "causes" }, view.causes.map((one) => h("li", { "data-cause": one.cause },
      one.count
        ? h("button", { type: "button", class: "link", title: "Show the scenarios with attempts of this cause", onclick: () => { state.cause = one.cause; causeSelect.value = one.cause; update(); } },
          word("cause", one.cause) + ": " + fmt.int(one.count))
        : h("span", { class: "muted" }, word("cause", one.cause) + ": 0"),
      one.count && one.share !== null ? h("span", { class: "muted" }, " · " + fmt.pct(one.share, 0)) : null)));
    return tile("Why not passed", fmt.int(view.not_passed),
      view.not_passed ? list : h("span", { class: "muted" }, view.header.kept ? "every attempt passed" : "nothing was tested: no attempt was played"),
      h("span", { class: "muted" }, "failed or not judged, by whose it was"));
  }

  /* Judging: how far the judge can be trusted, claim by claim (agreement.Consensus). Every text
     from the run (claims, judges' and models' names) goes in as text. */

  const JUDGING_ROWS = 300;

  function judging() {
    const j = view.judging;
    if (!j) return null;
    const several = j.judges.length > 1;
    const asked = "each claim asked " + (j.repeats === 1 ? "once" : j.repeats + " times") +
      (several ? " of each of " + j.judges.length + " judges" : "") +
      (j.repeats > 1 || several ? ", decided by " + j.panel + (j.panel === "unanimous" ? " (held only when every vote held)" : " (a tie decides nothing)") : "") +
      "; evidence " + (j.evidence === "require" ? "required" : "checked");
    const notes = [];
    if (j.alike.length) {
      notes.push(h("div", { class: "notice bad", id: "judging-bias" },
        h("strong", null, "! Possible bias: a judge from the agent's provider"),
        j.alike.join(", ") + (j.alike.length === 1 ? " is" : " are") + " from " + j.agent_provider +
        ", the provider of the agent's model" + (j.agent_model ? " (" + j.agent_model + ")" : "") +
        ": judges tend to favour answers of their own family. Add or use a judge from another provider."));
    }
    const pct = (value) => (value === null || value === undefined ? "—" : fmt.pct(value));
    const kappa = (value) => (value === null || value === undefined ? "undefined" : value.toFixed(2));
    const facts = [
      ["judges", j.judges.map((name) => name + (j.providers[name] ? " (" + j.providers[name] + ")" : "")).join(", ") || "—"],
      j.agent_model || j.agent_provider ? ["agent's model", (j.agent_model || "—") + (j.agent_provider ? " (" + j.agent_provider + ")" : "")] : null,
      j.repeats > 1 ? ["self-agreement", pct(j.agreement)] : null,
      several ? ["Fleiss' κ", kappa(j.kappa) + " · " + j.kappa_reading + " · " + fmt.int(j.kappa_subjects) + " decisions"] : null,
      ["evidence weak or not in the dialogue", fmt.int(j.unquoted) + " of " + fmt.int(j.decisions) + " decisions"],
      j.repeats > 1 ? ["ambiguous claims", fmt.int(j.ambiguous)] : null,
      several ? ["claims the judges disagree on", fmt.int(j.disagree)] : null,
    ];
    const flagged = (row) => row.ambiguous || row.disagree || row.unquoted > 0;
    const rows = j.claims.slice().sort((a, b) =>
      (flagged(b) - flagged(a)) || ((a.agreement === null ? 1 : a.agreement) - (b.agreement === null ? 1 : b.agreement)) || (b.unquoted - a.unquoted));
    const link = (row, one) => h("button", {
      type: "button",
      class: "decision-link",
      title: "open attempt " + one.attempt + " of " + row.scenario,
      onclick: () => open(row.scenario, String(one.attempt)),
    }, "#" + one.attempt + (one.votes ? " " + one.held + "/" + one.votes + " held" : "") + (one.decided === "split" ? " · split" : ""));
    const head = h("tr", null,
      h("th", { scope: "col" }, "scenario · claim"),
      h("th", { scope: "col", class: "num" }, "decisions"),
      h("th", { scope: "col", class: "num", title: "quoted and found · quoted, not found · quoted nothing" }, "evidence found · not · none"),
      j.repeats > 1 ? h("th", { scope: "col", class: "num", title: "mean share of each judge's votes agreeing with its own majority" }, "self-agreement") : null,
      j.repeats > 1 || several ? h("th", { scope: "col", class: "num", title: "decisions whose votes tied, deciding nothing · whose votes were not all the same" }, "tied · divided") : null,
      several ? h("th", { scope: "col", class: "num", title: "share of judge pairs agreeing · Fleiss' κ" }, "judges agree") : null,
      h("th", { scope: "col" }, "flag"));
    const body = rows.slice(0, JUDGING_ROWS).map((row) => {
      const flags = [];
      if (row.ambiguous) flags.push(h("div", { class: "st st-never flag-ambiguous" }, "ambiguous claim: rewrite it"));
      if (row.disagree) flags.push(h("div", { class: "st st-flaky flag-disagree" }, "the judges disagree on it"));
      if (row.unquoted) flags.push(h("div", { class: "st st-flaky flag-unquoted" }, fmt.int(row.unquoted) + " quote" + (row.unquoted === 1 ? "" : "s") + " weak or not in the dialogue"));
      const links = [];
      if (row.split.length) links.push(h("div", { class: "small" }, h("span", { class: "muted" }, "votes divided: "), row.split.map((one) => link(row, one)), row.dissents > row.split.length ? h("span", { class: "muted" }, " +" + fmt.int(row.dissents - row.split.length) + " more") : null));
      if (row.unfound.length) links.push(h("div", { class: "small" }, h("span", { class: "muted" }, "quote weak or not found: "), row.unfound.map((one) => link(row, one)), row.unquoted > row.unfound.length ? h("span", { class: "muted" }, " +" + fmt.int(row.unquoted - row.unfound.length) + " more") : null));
      return h("tr", { class: flagged(row) ? "flagged" : null },
        h("th", { scope: "row", class: "claim-name" }, h("span", { class: "id" }, row.scenario), " · ", row.claim),
        h("td", { class: "num" }, fmt.int(row.decisions)),
        h("td", { class: "num" }, fmt.int(row.quoted) + " · " + fmt.int(row.unquoted) + " · " + fmt.int(row.silent)),
        j.repeats > 1 ? h("td", { class: "num" }, pct(row.agreement)) : null,
        j.repeats > 1 || several ? h("td", { class: "num" }, fmt.int(row.splits) + " · " + fmt.int(row.dissents)) : null,
        several ? h("td", { class: "num" }, pct(row.between) + " · κ " + kappa(row.kappa)) : null,
        h("td", null, flags.length ? flags : h("span", { class: "muted" }, "—"), links));
    });
    return h("section", { class: "judging", id: "judging", "aria-label": "Judging" },
      h("h2", null, "Judging ", h("span", { class: "muted" }, "— " + asked)),
      notes,
      facts.length ? Convy.facts(facts) : null,
      h("p", { class: "muted small" },
        (j.repeats > 1 ? "A claim is ambiguous when the judge agrees with itself less than 90% of the time, or a decision's votes tied: rewrite it so that it has one reading. " : "") +
        (several ? "The judges disagree on a claim when fewer than 80% of judge pairs agree. κ: 1 perfect, 0 chance. " : "") +
        "A quote not in the dialogue may be the judge's invention, and one too short, a piece of a word or the user's words proves nothing of the agent: open the attempt to check."),
      h("div", { class: "table-wrap" }, h("table", { class: "grid judging-claims" }, h("thead", null, head), h("tbody", null, body))),
      rows.length > JUDGING_ROWS ? h("p", { class: "muted small" }, fmt.int(rows.length - JUDGING_ROWS) + " more claims, flagged first, are left out") : null);
  }

  /* Controls. */

  const search = h("input", { type: "search", id: "search", placeholder: Convy.placeholder("Search scenarios, tags, claims"), "aria-label": "Search scenarios" });
  const statusSelect = h("select", { id: "filter-status", "aria-label": "Filter by status" },
    h("option", { value: "" }, "every status"),
    h("option", { value: "always" }, "✓ always passes"),
    h("option", { value: "flaky" }, "~ flaky"),
    h("option", { value: "never" }, "✗ never passes"),
    h("option", { value: "not_judged" }, "– not judged"));
  const tagSelect = h("select", { id: "filter-tag", "aria-label": "Filter by tag" },
    h("option", { value: "" }, "every tag"), view.tags.map((tag) => h("option", { value: tag }, tag)));
  const claimTexts = view.claims;
  const claimSelect = h("select", { id: "filter-claim", "aria-label": "Filter by claim", class: "claim-select" },
    h("option", { value: "" }, "every claim"), claimTexts.map((text) => h("option", { value: text }, text.length > 70 ? text.slice(0, 69) + "…" : text)));
  const variantSelect = h("select", { id: "filter-variant", "aria-label": "Filter by variant value" },
    h("option", { value: "" }, "every variant"),
    DIMENSIONS.map((dim) => h("optgroup", { label: dim.key }, dim.values.map((one) => h("option", { value: dim.key + "=" + one.value }, dim.key + " = " + one.value)))));
  const causeSelect = h("select", { id: "filter-cause", "aria-label": "Filter by cause" },
    h("option", { value: "" }, "every cause"), CAUSES.map((cause) => h("option", { value: cause }, word("cause", cause))));
  const groupSelect = h("select", { id: "group", "aria-label": "Group by" },
    h("option", { value: "" }, "no groups"), h("option", { value: "folder" }, "by folder"), h("option", { value: "tag" }, "by tag"),
    DIMENSIONS.map((dim) => h("option", { value: "variant:" + dim.key }, "by " + dim.key)));
  const count = h("span", { class: "count", "aria-live": "polite" });

  function controls() {
    search.addEventListener("input", () => { state.q = search.value; update(); });
    statusSelect.addEventListener("change", () => { state.status = statusSelect.value; update(); });
    tagSelect.addEventListener("change", () => { state.tag = tagSelect.value; update(); });
    variantSelect.addEventListener("change", () => { state.variant = variantSelect.value; update(); });
    claimSelect.addEventListener("change", () => { state.claim = claimSelect.value; update(); });
    causeSelect.addEventListener("change", () => { state.cause = causeSelect.value; update(); });
    groupSelect.addEventListener("change", () => { state.group = groupSelect.value; update(); });
    return h("div", { class: "controls" },
      search,
      h("div", { class: "filters" },
        h("label", { class: "field" }, "status", statusSelect),
        h("label", { class: "field" }, "tag", tagSelect),
        DIMENSIONS.length ? h("label", { class: "field" }, "variant", variantSelect) : null,
        h("label", { class: "field" }, "claim", claimSelect),
        h("label", { class: "field" }, "cause", causeSelect),
        h("label", { class: "field" }, "group", groupSelect)),
      count);
  }

  /* The scenario table: rows made once, then filtered, sorted and grouped. */

  const COLUMNS = [
    ["Scenario", "id", false],
    ["Status", "status", false],
    ["Passed", "rate", true],
    ["Attempts", null, false],
    ["Claims held", "claims", true],
    ["Turns", "turns", true],
    ["Agent tokens", "tokens", true],
    ["Cost", "cost", true],
    ["Answer p50", "time", true],
  ];
  const SORT = {
    id: (one) => one.id,
    status: (one) => ORDER[one.status],
    rate: (one) => (one.rate ? one.rate.estimate : null),
    turns: (one) => one.turns.p50,
    claims: (one) => one.claims_held.share,
    tokens: (one) => one.agent.tokens.total,
    cost: (one) => (one.cost.amount === null ? null : Number(one.cost.amount)),
    time: (one) => one.answer_p50,
  };

  const thead = h("thead");
  const tbody = h("tbody");
  const table = h("table", { class: "grid scenarios", id: "scenarios" }, thead, tbody);
  const rows = new Map();

  /* The attempts' marks in a row, runs of the same mark in one node. */
  function strip(one) {
    if (!one.attempts.length) return h("span", { class: "muted" }, "none kept");
    const shown = one.attempts.slice(0, 40);
    const box = h("span", { class: "marks", title: shown.map((a) => "attempt " + a.attempt + ": " + Convy.words.attempt[a.status][1]).join("\n") });
    let from = 0;
    for (let i = 1; i <= shown.length; i++) {
      if (i === shown.length || shown[i].status !== shown[from].status) {
        box.appendChild(h("span", { class: "mark-" + shown[from].status }, Convy.words.attempt[shown[from].status][0].repeat(i - from)));
        from = i;
      }
    }
    if (one.attempts.length > 40) box.appendChild(h("span", { class: "muted" }, " +" + (one.attempts.length - 40)));
    return box;
  }

  const HOLDS = { always: "mark-held", never: "mark-failed", sometimes: null, undecided: null };

  /* Claims held out of decided, over every claim and attempt; with a claim filter, that claim's. */
  function claimsCell(one) {
    if (!one.claims.length) return h("span", { class: "muted" }, "—");
    const title = one.claims.map((claim) => claim.held + "/" + claim.decided + "  " + claim.text).join("\n");
    const chosen = state.claim ? one.claims.find((claim) => claim.text === state.claim) : null;
    if (chosen) return h("span", { class: "claims", title }, h("span", { class: HOLDS[chosen.holds] }, chosen.held + "/" + chosen.decided));
    const held = one.claims_held;
    return h("span", { class: "claims", title },
      h("span", { class: HOLDS[held.holds] }, fmt.int(held.held) + "/" + fmt.int(held.decided)),
      held.share === null ? null : h("span", { class: "muted" }, " " + fmt.pct(held.share, 0)));
  }

  function row(one, key) {
    if (rows.has(key)) return rows.get(key);
    const turns = one.turns.count ? (one.turns.min === one.turns.max ? fmt.int(one.turns.min) : fmt.int(one.turns.min) + "–" + fmt.int(one.turns.max)) : "—";
    const tr = h("tr", { class: "row", tabindex: "-1", "data-id": one.id },
      h("td", null, h("div", { class: "id" }, Convy.idText(one.id)), one.tags.map((tag) => h("span", { class: "tag" }, tag))),
      h("td", null, scenarioStatus(one)),
      h("td", { class: "num" },
        h("div", null, h("span", { class: "rate" }, fmt.int(one.passed) + "/" + fmt.int(one.judged)), one.rate ? " " + fmt.pct(one.rate.estimate, 0) : ""),
        one.rate ? h("div", { class: "interval" }, fmt.span(one.rate)) : null,
        one.not_judged ? h("div", { class: "interval" }, "– " + fmt.int(one.not_judged) + " not judged") : null),
      h("td", null, strip(one), one.adaptive ? h("div", { class: "interval adaptive" }, fmt.int(one.attempts.length) + " attempts · " + one.adaptive) : null),
      h("td", { class: "num claims-cell" }, claimsCell(one)),
      h("td", { class: "num" }, turns),
      h("td", { class: "num" }, fmt.tokens(one.agent.tokens)),
      h("td", { class: "num" }, fmt.cost(one.cost)),
      h("td", { class: "num" }, fmt.seconds(one.answer_p50)));
    tr.addEventListener("click", () => open(one.id, ""));
    tr.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) {
        event.preventDefault();
        event.stopPropagation();
        open(one.id, "");
      }
    });
    rows.set(key, tr);
    return tr;
  }

  function matches(one) {
    if (state.status && one.status !== state.status) return false;
    if (state.tag && !one.tags.includes(state.tag)) return false;
    if (state.variant) {
      const at = state.variant.indexOf("=");
      if (!one.variant || one.variant[state.variant.slice(0, at)] !== state.variant.slice(at + 1)) return false;
    }
    if (state.claim && !one.claims.some((claim) => claim.text === state.claim)) return false;
    if (state.cause && !one.causes[state.cause]) return false;
    if (state.q) {
      const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
      const text = (one.id + " " + one.tags.join(" ") + " " + one.claims.map((claim) => claim.text).join(" ")).toLowerCase();
      if (!words.every((part) => text.includes(part))) return false;
    }
    return true;
  }

  function sortBy(key) {
    if (state.sort === key) state.dir = state.dir === "asc" ? "desc" : "asc";
    else {
      state.sort = key;
      state.dir = key === "id" || key === "status" ? "asc" : "desc";
    }
    update();
  }

  let visible = [];
  let order = [];
  let lastClaim = null;
  let items = [];
  let shown = 0;
  const PAGE = 200;
  const moreRow = h("tr", { class: "more" });
  const watcher = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) showMore(PAGE);
  }, { rootMargin: "400px" });

  function draw() {
    Convy.fill(thead, h("tr", null, COLUMNS.map(([label, key, numeric]) =>
      key ? Convy.sortHeader(label, key, state, sortBy, numeric) : h("th", { scope: "col" }, label))));
    let list = scenarios.filter(matches);
    if (state.sort && SORT[state.sort]) {
      const get = SORT[state.sort];
      list = list.slice().sort((a, b) => Convy.compare(get(a), get(b), state.dir) || a.index - b.index);
    }
    if (lastClaim !== state.claim) {
      for (const tr of rows.values()) {
        const one = byId.get(tr.dataset.id);
        if (one) Convy.fill(tr.querySelector(".claims-cell"), claimsCell(one));
      }
      lastClaim = state.claim;
    }
    items = [];
    if (state.group) {
      const groups = new Map();
      const key = state.group.startsWith("variant:") ? state.group.slice(8) : null;
      for (const one of list) {
        const names = key !== null ? [one.variant && one.variant[key] !== undefined ? one.variant[key] : ""]
          : state.group === "tag" ? (one.tags.length ? one.tags : [""]) : [one.group];
        for (const name of names) {
          if (!groups.has(name)) groups.set(name, []);
          groups.get(name).push(one);
        }
      }
      const dim = key !== null ? DIMENSIONS.find((one) => one.key === key) : null;
      const matrixOrder = dim ? dim.values.map((one) => one.value) : [];
      const place = (name) => (matrixOrder.includes(name) ? matrixOrder.indexOf(name) : matrixOrder.length);
      const names = [...groups.keys()].sort((a, b) => (a === "" ? 1 : b === "" ? -1 : dim ? place(a) - place(b) : a.localeCompare(b)));
      for (const name of names) {
        const members = groups.get(name);
        const label = name || (key !== null ? "no " + key : state.group === "tag" ? "no tag" : "top folder");
        const kind = key !== null ? (name ? key + " " : "") : state.group === "tag" ? "tag " : "folder ";
        const value = key !== null && name ? VALUE.get(key + "=" + name) : null;
        const rate = value && value.rate ? " · " + fmt.pct(value.rate.estimate, 0) + " " + fmt.span(value.rate) + " passed" : "";
        items.push([kind + label + " · " + members.length + (members.length === 1 ? " scenario" : " scenarios") + rate, null]);
        for (const one of members) items.push([one, one.index + "|" + state.group + "|" + name]);
      }
    } else {
      for (const one of list) items.push([one, String(one.index)]);
    }
    order = [...new Set(items.filter(([, key]) => key !== null).map(([one]) => one.id))];
    visible = [];
    shown = 0;
    Convy.fill(tbody);
    if (!list.length) tbody.appendChild(h("tr", null, h("td", { colspan: COLUMNS.length, class: "empty" }, scenarios.length ? "No scenario matches these filters." : "This run has no scenarios.")));
    showMore(PAGE);
    count.textContent = list.length === scenarios.length ? fmt.int(scenarios.length) + " scenarios" : fmt.int(list.length) + " of " + fmt.int(scenarios.length) + " scenarios";
  }

  /* A page of rows at a time: a run of thousands of scenarios opens with its first rows, and
     the next come as the reader scrolls near the end, or asks. */
  function showMore(how) {
    const to = Math.min(items.length, shown + how);
    const fragment = document.createDocumentFragment();
    for (let i = shown; i < to; i++) {
      const [one, key] = items[i];
      if (key === null) {
        fragment.appendChild(h("tr", { class: "group" }, h("th", { colspan: COLUMNS.length, scope: "rowgroup" }, one)));
        continue;
      }
      const tr = row(one, key);
      fragment.appendChild(tr);
      visible.push(tr);
    }
    shown = to;
    if (visible.length && !visible.some((tr) => tr.tabIndex === 0)) visible[0].tabIndex = 0;
    if (moreRow.parentNode) moreRow.remove();
    tbody.appendChild(fragment);
    if (watcher) watcher.unobserve(moreRow);
    if (shown < items.length) {
      const left = items.length - shown;
      Convy.fill(moreRow, h("td", { colspan: COLUMNS.length, class: "empty" },
        "Showing the first " + fmt.int(visible.length) + " rows. ",
        h("button", { type: "button", onclick: () => showMore(PAGE) }, "Show " + fmt.int(Math.min(PAGE, left)) + " more"), " ",
        h("button", { type: "button", onclick: () => showMore(items.length) }, "Show all " + fmt.int(left))));
      tbody.appendChild(moreRow);
      if (watcher) watcher.observe(moreRow);
    }
    mark();
  }

  function mark() {
    for (const tr of tbody.querySelectorAll("tr.current")) tr.classList.remove("current");
    if (state.s) for (const tr of visible) if (tr.dataset.id === state.s) tr.classList.add("current");
  }

  /* Moving between rows with the keys. */

  let cursor = -1;
  function move(step) {
    if (win.isOpen()) {
      neighbour(step);
      return;
    }
    if (!visible.length) return;
    if (Convy.stepped(visible, cursor, step) === visible.length - 1 && step > 0 && shown < items.length) showMore(PAGE);
    cursor = Convy.stepped(visible, cursor, step);
    Convy.focusRow(visible, cursor);
  }

  function neighbour(step) {
    const next = order[order.indexOf(state.s) + step];
    if (next !== undefined) open(next, "");
  }

  /* The scenario window. */

  const win = Scene.frame(() => {
    const id = state.s;
    state.s = "";
    state.a = "";
    save();
    mark();
    const tr = visible.find((one) => one.dataset.id === id);
    if (tr) {
      for (const other of visible) other.tabIndex = -1;
      tr.tabIndex = 0;
      cursor = visible.indexOf(tr);
      tr.focus();
    }
    const one = byId.get(id);
    if (one) prepare(one);  /* the window just closed is the likeliest to open again */
  });

  /* A scenario of many attempts shows ATTEMPTS of them around the chosen one: a window of 1,000
     attempts drew 7,657 elements and took a third of a second to open. About 20 columns of the
     claim × attempt matrix fit the window's width; the 50 it drew before were mostly out of sight
     and were most of what the window drew. */
  const ATTEMPTS = 20;

  function page(one, chosen) {
    const at = Math.max(0, one.attempts.findIndex((a) => String(a.attempt) === String(chosen)));
    const start = Math.max(0, Math.min(at - Math.floor(ATTEMPTS / 2), one.attempts.length - ATTEMPTS));
    return { start: start, list: one.attempts.slice(start, start + ATTEMPTS) };
  }

  function paging(one, shown) {
    if (shown.list.length === one.attempts.length) return null;
    const before = shown.start > 0 ? one.attempts[Math.max(0, shown.start - ATTEMPTS + Math.floor(ATTEMPTS / 2))] : null;
    const after = shown.start + shown.list.length < one.attempts.length ? one.attempts[Math.min(one.attempts.length - 1, shown.start + shown.list.length + Math.floor(ATTEMPTS / 2))] : null;
    return h("p", { class: "small muted paging" },
      h("button", { type: "button", disabled: before ? null : true, onclick: () => before && open(one.id, String(before.attempt)) }, "‹ earlier"),
      " attempts " + fmt.int(shown.start + 1) + "–" + fmt.int(shown.start + shown.list.length) + " of " + fmt.int(one.attempts.length) + " ",
      h("button", { type: "button", disabled: after ? null : true, onclick: () => after && open(one.id, String(after.attempt)) }, "later ›"));
  }

  function matrix(one, current, attempts) {
    if (!one.attempts.length) return h("p", { class: "muted" }, "No attempt of this scenario was kept.");
    const picked = (number) => String(number) === String(current) ? "current" : null;
    return h("div", { class: "matrix-wrap" },
      h("table", { class: "matrix", id: "matrix" },
        h("thead", null, h("tr", null,
          h("th", { class: "claim-name", scope: "col" }, "Claim"),
          h("th", { scope: "col" }, "held"),
          attempts.map((a) => h("th", { scope: "col", class: picked(a.attempt) },
            h("button", { type: "button", "aria-pressed": picked(a.attempt) ? "true" : "false", title: "Open attempt " + a.attempt + ": " + Convy.words.attempt[a.status][1], onclick: () => open(one.id, String(a.attempt)) }, "#" + a.attempt))))),
        h("tbody", null,
          h("tr", null,
            h("th", { class: "claim-name", scope: "row" }, "Attempt result"),
            h("td", null, fmt.int(one.passed) + "/" + fmt.int(one.judged)),
            attempts.map((a) => h("td", { class: "mark mark-" + a.status + (picked(a.attempt) ? " current" : ""), title: "attempt " + a.attempt + ": " + Convy.words.attempt[a.status][1] + (a.why ? " (" + word("why", a.why) + ")" : "") + (a.cause ? " · cause: " + word("cause", a.cause) : "") + " · stop: " + stopped(a.stop) }, Convy.words.attempt[a.status][0]))),
          one.claims.map((claim, i) => h("tr", null,
            h("th", { class: "claim-name", scope: "row" }, claim.text, " ", h("span", { class: "by" }, "by " + claim.by)),
            h("td", { class: "nowrap", title: claim.rate ? fmt.interval(claim.rate) : "" }, claim.held + "/" + claim.decided),
            attempts.map((a) => h("td", { class: "mark mark-" + a.marks[i] + (picked(a.attempt) ? " current" : ""), title: "attempt " + a.attempt + ": " + Convy.words.markWord[a.marks[i]] }, Convy.words.mark[a.marks[i]])))))));
  }

  function open(id, attempt) {
    const one = byId.get(id);
    if (!one) return;
    const chosen = attempt && one.attempts.some((a) => String(a.attempt) === String(attempt))
      ? String(attempt)
      : first(one);
    state.s = id;
    state.a = chosen;
    save();
    mark();
    /* Drawn ahead while the page was idle (see prepare), or drawn now. */
    const made = prepared && prepared.key === drawing(one, chosen) ? prepared.made : parts(one, chosen);
    prepared = null;
    Convy.fill(win.title, made.title);
    Convy.fill(win.tools, made.tools);
    Convy.fill(win.body, made.body);
    win.show();
    if (made.pending) made.pending();
    /* What the reader may open next: the attempts beside this one, the next and previous scenario. */
    later(() => {
      if (state.s !== id) return;
      const numbers = one.attempts.map((a) => String(a.attempt));
      const here = numbers.indexOf(chosen);
      for (const number of [numbers[here + 1], numbers[here - 1]]) if (number !== undefined) packed.warm(id + "#" + number);
      for (const step of [1, -1]) {
        const other = byId.get(order[order.indexOf(id) + step]);
        if (other) warm(other);
      }
    });
  }

  /* The attempt a scenario's window opens on: under a cause filter, its first attempt of that
     cause; else the first that failed, or the first kept (ScenarioView.first). */
  function first(one) {
    const caused = state.cause ? one.attempts.find((a) => a.cause === state.cause) : null;
    if (caused) return String(caused.attempt);
    return one.first === null ? "" : String(one.first);
  }

  /* What a window's parts depend on besides the data: the scenario, the attempt, and where the
     scenario stands among those shown (its previous and next buttons). */
  function drawing(one, chosen) {
    return [one.id, chosen, order.indexOf(one.id), order.length].join("\n");
  }

  /* The window's title, tools and body for a scenario and one of its attempts. The attempt is
     drawn with them when its chunk is inflated already (it usually is: see warm), so the
     window's first frame is its whole: one style and layout pass, no "Loading" frame, no task
     between the click and that frame; else "pending" draws it once its chunk is inflated. */
  /* A scenario with no attempt kept has no status yet: it is said so, not called "not judged". */
  function scenarioStatus(one) {
    if (one.attempts.length) return status("scenario", one.status, true);
    return h("span", { class: "badge st st-not_played" }, view.header.status === "running" ? "… not played yet" : "– not played");
  }

  function parts(one, chosen) {
    const id = one.id;
    const title = [
      h("span", null, one.id),
      scenarioStatus(one),
      h("span", { class: "small muted" }, fmt.int(one.passed) + "/" + fmt.int(one.judged) + " passed" + (one.rate ? " · " + fmt.pct(one.rate.estimate, 0) + " " + fmt.span(one.rate) : ""))];
    const ids = order;
    const at = ids.indexOf(id);
    const tools = [
      h("button", { type: "button", title: "Previous scenario (k)", disabled: at <= 0 || null, onclick: () => neighbour(-1) }, "↑ previous"),
      h("button", { type: "button", title: "Next scenario (j)", disabled: at < 0 || at >= ids.length - 1 || null, onclick: () => neighbour(1) }, "↓ next"),
      Labels.tool()];
    const detail = h("div", { class: "attempt-detail", "aria-live": "polite" });
    const shown = page(one, chosen);
    const tabs = h("div", { class: "attempt-tabs", role: "toolbar", "aria-label": "Attempts (← →)" },
      shown.list.map((a) => h("button", { type: "button", "aria-pressed": String(a.attempt) === chosen ? "true" : "false", onclick: () => open(one.id, String(a.attempt)) },
        h("span", { class: "mark-" + a.status }, Convy.words.attempt[a.status][0]), " attempt " + a.attempt)));
    const body = [
      one.adaptive ? h("p", { class: "small adaptive" }, fmt.int(one.attempts.length) + " attempts: " + one.adaptive) : null,
      h("h3", null, "Claims × attempts"),
      paging(one, shown),
      matrix(one, chosen, shown.list),
      h("p", { class: "small muted" },
        "stops: " + Object.entries(one.stops).map(([stop, n]) => stopped(stop) + " ×" + n).join(", "),
        " · tokens " + fmt.tokens(one.agent.tokens),
        " · cost " + fmt.cost(one.cost),
        " · answer p50 " + fmt.seconds(one.agent.seconds.p50) + ", p95 " + fmt.seconds(one.agent.seconds.p95)),
      tabs,
      detail];
    const key = id + "#" + chosen;  /* page.py packs each attempt apart: only its chunk is inflated */
    const missing = () => h("p", { class: "muted" }, "Attempt " + chosen + " is not in this report.");
    const ready = chosen && packed.has(key) ? packed.now(key) : null;
    let pending = null;
    if (!chosen) Convy.fill(detail);
    else if (!packed.has(key)) Convy.fill(detail, missing());
    else if (ready) Convy.fill(detail, ready.value ? Scene.attempt(ready.value) : missing());
    else {
      Convy.fill(detail, h("p", { class: "loading" }, "Loading attempt " + chosen + "…"));
      pending = () => packed.get(key).then((d) => {
        if (state.s !== id || state.a !== chosen) return;
        Convy.fill(detail, d ? Scene.attempt(d) : missing());
      }, (error) => {
        Convy.fill(detail, h("div", { class: "notice bad" }, h("strong", null, "The dialogue could not be read"), String(error && error.message ? error.message : error)));
      });
    }
    return { title, tools, body, pending, ready: Boolean(ready) };
  }

  /* One window drawn ahead, while the page is idle: that of the scenario a reader is likeliest to
     open next (its row pointed at or focused, else the first row), once its chunk is inflated.
     It is used if the click that comes opens the same drawing, and dropped otherwise. */
  let prepared = null;

  function prepare(one) {
    later(() => {
      if (win.isOpen()) return;
      const chosen = first(one);
      const key = drawing(one, chosen);
      if (prepared && prepared.key === key) return;
      const made = parts(one, chosen);
      if (made.ready) prepared = { key, made };
    });
  }

  /* Inflating ahead. A chunk takes a few milliseconds to inflate and parse, but done after the
     click it costs the window a task and a frame; done before, the window opens in the click's
     own task. So the chunk of a scenario's first attempt is inflated when its row is pointed at
     or focused, and, once the page is idle after it is drawn, those of the first rows shown. */
  const later = typeof requestIdleCallback === "function"
    ? (work) => requestIdleCallback(work, { timeout: 1000 })
    : (work) => setTimeout(work, 50);

  function warm(one) {
    const chosen = first(one);
    return chosen === "" ? Promise.resolve() : packed.warm(one.id + "#" + chosen);
  }

  let pointed = null;
  function warmRow(event) {
    const tr = event.target.closest && event.target.closest("tr.row");
    const one = tr ? byId.get(tr.dataset.id) : null;
    if (!one || one === pointed) return;
    pointed = one;
    warm(one).then(() => { if (pointed === one) prepare(one); });
  }

  tbody.addEventListener("pointerover", warmRow);
  tbody.addEventListener("pointerdown", warmRow);
  tbody.addEventListener("focusin", warmRow);

  const AHEAD = 8;  /* the first rows a reader sees, whose chunks are inflated while the page is idle */

  function ahead(from) {
    later(() => {
      const tr = visible[from];
      const one = tr ? byId.get(tr.dataset.id) : null;
      if (!one || from >= AHEAD) return;
      const warmed = warm(one);
      if (from === 0) warmed.then(() => { if (pointed === null) prepare(one); });
      ahead(from + 1);
    });
  }

  function side(step) {
    if (!win.isOpen()) return;
    const one = byId.get(state.s);
    if (!one) return;
    const numbers = one.attempts.map((a) => String(a.attempt));
    const next = numbers[numbers.indexOf(state.a) + step];
    if (next !== undefined) open(one.id, next);
  }

  /* The hash: written on every change, read on load and when it changes. */

  /* Written after the next frame, once for all the changes before it: replacing the URL costs
     the browser several milliseconds (and a reload of the page's icon), which would otherwise
     stand between a click and the frame that answers it. */
  /* Where no frame comes (a hidden tab; a headless browser whose frames are starved on a busy
     machine) it is written after 100 ms all the same, or it would wait for a frame that never is. */
  let saving = false;
  function save() {
    if (saving) return;
    saving = true;
    let written = false;
    const write = () => {
      if (written) return;
      written = true;
      saving = false;
      kept();
    };
    requestAnimationFrame(() => setTimeout(write, 0));
    setTimeout(write, 100);
  }

  function kept() {
    hash.write({ q: state.q, status: state.status, tag: state.tag, variant: state.variant, claim: state.claim, cause: state.cause, group: state.group, sort: state.sort, dir: state.sort ? state.dir : "", s: state.s, a: state.s ? state.a : "" });
  }

  function update() {
    save();
    draw();
  }

  function load() {
    const read = hash.read();
    state.q = read.q || "";
    state.status = ORDER[read.status] !== undefined ? read.status : "";
    state.tag = view.tags.includes(read.tag) ? read.tag : "";
    state.claim = claimTexts.includes(read.claim) ? read.claim : "";
    state.variant = VALUE.has(read.variant) ? read.variant : "";
    state.cause = CAUSES.includes(read.cause) ? read.cause : "";
    state.group = GROUPS.includes(read.group) ? read.group : "";
    state.sort = SORT[read.sort] ? read.sort : "";
    state.dir = read.dir === "asc" ? "asc" : "desc";
    search.value = state.q;
    statusSelect.value = state.status;
    tagSelect.value = state.tag;
    variantSelect.value = state.variant;
    claimSelect.value = state.claim;
    causeSelect.value = state.cause;
    groupSelect.value = state.group;
    draw();
    if (read.s && byId.has(read.s)) open(read.s, read.a || "");
    else if (win.isOpen()) win.close();
  }

  /* What failed first: the header and its notices, the summary's one row of tiles, then the
     scenarios; the variants, the agreement with people and the judging after them. */
  Convy.fill(app,
    ...header().flat(),
    tiles(),
    h("section", { class: "scenario-table" },
      h("h2", null, "Scenarios ", h("span", { class: "muted" }, Convy.TOUCH ? "— tap a row for its attempts" : "— click a row or press Enter for its attempts")),
      controls(),
      Convy.keyHelp([["/", "search"], ["j k ↑ ↓", "move"], ["Enter", "open"], ["← →", "attempts"], ["Esc", "close"], ["t", "theme"]]),
      h("div", { class: "table-wrap" }, table)),
    variants(),
    Labels.agreement(view.agreement, open),
    judging(),
    h("footer", { class: "foot" }, "Made by convy" + (view.header.convy ? " " + view.header.convy : "") + ". Everything on this page is in this one file; it asks nothing of the network."));

  Convy.keys({ search: () => { win.close(); search.focus(); search.select(); }, move, open: () => { if (!win.isOpen() && visible[cursor]) visible[cursor].click(); }, side });
  window.addEventListener("hashchange", load);
  load();
  /* A run under way: the page reloads itself (Convy.live), the view written to the hash first
     and the rows drawn kept, so the scroll can be put back. */
  live.begin({ save: kept, keep: () => ({ rows: shown }), restore: (own) => { if (own && own.rows > shown) showMore(own.rows - shown); } });
  ahead(0);
})();
