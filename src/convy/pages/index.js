/* convy: every run. Draws the IndexView embedded in #data: a table of runs (sortable,
   searchable, filtered by agent), a pass-rate trend per agent, the comparisons made, and the
   command that compares two runs. The view lives in the URL's hash. */

(() => {
  const { h, s, fmt, facts, hash } = Convy;
  const view = Convy.json("data");
  const app = document.getElementById("app");
  const runs = view.runs.map((row, index) => Object.assign({ index }, row));
  const state = { q: "", agent: "", sort: "", dir: "" };
  const boxes = [];  /* each trend's box, its agent and points: drawn once laid out */

  /* The trend of one agent: its pass rate over its runs, oldest on the left. A line joins a run to
     the one before it only when Python found the two comparable and both finished (point.joined);
     any other run is a dot of its own. The drawing is as wide as its tile (measured once it is in
     the page), so its labels keep their 11 px rather than being scaled down with it. */
  function drawing(agent, points, width) {
    const height = 72, left = 40, right = 10, top = 8, bottom = 8;
    const x = (i) => left + (points.length === 1 ? (width - left - right) / 2 : (i / (points.length - 1)) * (width - left - right));
    const y = (rate) => top + (1 - rate) * (height - top - bottom);
    const svg = s("svg", { class: "trend", width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "Pass rate of " + agent + " over " + points.length + (points.length === 1 ? " run" : " runs") });
    for (const level of [0, 0.5, 1]) {
      svg.appendChild(s("line", { class: "grid-line", x1: left, x2: width - right, y1: y(level), y2: y(level) }));
      svg.appendChild(s("text", { class: "axis", x: left - 4, y: y(level) + 4, "text-anchor": "end" }, fmt.pct(level, 0)));
    }
    let path = "";
    points.forEach((point, i) => {
      const before = i ? points[i - 1] : null;
      if (point.rate === null || !before || before.rate === null || !point.joined) return;
      path += "M" + x(i - 1).toFixed(1) + " " + y(before.rate).toFixed(1) + " L" + x(i).toFixed(1) + " " + y(point.rate).toFixed(1) + " ";
    });
    if (path) svg.appendChild(s("path", { class: "trend-line", d: path.trim() }));
    points.forEach((point, i) => {
      if (point.rate === null) {
        svg.appendChild(s("text", { class: "axis", x: x(i), y: height - 2, "text-anchor": "middle" }, "–", s("title", null, point.run + " · nothing judged")));
        return;
      }
      svg.appendChild(s("circle", { class: "trend-dot" + (point.finished ? "" : " unfinished"), cx: x(i), cy: y(point.rate), r: 3.5 },
        s("title", null, point.run + (point.name ? " · " + point.name : "") + " · " + fmt.date(point.started) + " · " + fmt.pct(point.rate) + (point.joined || !i ? "" : " · not comparable with the run before it"))));
    });
    return svg;
  }

  function trend(agent, points) {
    const box = h("div", { class: "trend-box" });
    boxes.push([box, agent, points]);
    const last = points.length ? points[points.length - 1] : null;
    return h("div", { class: "tile trend-tile", "data-agent": agent },
      h("h2", null, agent),
      box,
      h("div", { class: "line" }, last ? ["latest ", h("span", { class: "id" }, Convy.idText(last.run)), last.name ? " (" + last.name + ")" : "", ": " + (last.rate === null ? "nothing judged" : fmt.pct(last.rate))] : "no runs"),
      h("div", { class: "line muted" }, points.length + (points.length === 1 ? " run" : " runs") + ", oldest on the left; a line joins comparable finished runs only"));
  }

  /* The command that compares two runs, made from two choices. */
  function compareHelp() {
    const label = (row) => row.agent + " · " + row.run + (row.name ? " · " + row.name : "") + " · " + fmt.date(row.started);
    const baseSelect = h("select", { id: "compare-base", "aria-label": "Base run" }, runs.map((row) => h("option", { value: row.run }, label(row))));
    const candidateSelect = h("select", { id: "compare-candidate", "aria-label": "Candidate run" }, runs.map((row) => h("option", { value: row.run }, label(row))));
    const command = h("code", { id: "compare-command", class: "command" });
    const copy = h("button", { type: "button", title: "Copy the command" }, "Copy");
    if (view.suggested) {
      candidateSelect.value = view.suggested.candidate;
      baseSelect.value = view.suggested.base;
    }
    /* With no comparable pair to offer (view.suggested is null), the choice is the reader's: until
       two different runs are chosen, the command says what it needs. */
    const write = () => {
      command.textContent = runs.length && baseSelect.value !== candidateSelect.value
        ? "convy compare " + baseSelect.value + " " + candidateSelect.value
        : "convy compare BASE CANDIDATE";
      note.textContent = view.suggested ? "" : "No two runs here are comparable (same agent, both finished, nothing the comparison would flag): choose two.";
    };
    const note = h("div", { class: "line muted", id: "compare-note" });
    baseSelect.addEventListener("change", write);
    candidateSelect.addEventListener("change", write);
    copy.addEventListener("click", () => {
      const done = () => { copy.textContent = "Copied"; setTimeout(() => { copy.textContent = "Copy"; }, 1500); };
      try {
        navigator.clipboard.writeText(command.textContent).then(done, () => { copy.textContent = "Select and copy it"; });
      } catch (error) {
        copy.textContent = "Select and copy it";
      }
    });
    write();
    return h("div", { class: "tile compare-tile" },
      h("h2", null, "Compare two runs"),
      runs.length > 1
        ? h("div", { class: "line compare-pick" }, h("label", { class: "field" }, "base", baseSelect), h("label", { class: "field" }, "candidate", candidateSelect))
        : null,
      h("div", { class: "line command-line" }, command, runs.length ? copy : null),
      note,
      h("div", { class: "line muted" }, "writes results/compare/BASE--CANDIDATE.html and says whether the change is real"));
  }

  function comparisons() {
    return h("section", { class: "comparisons", id: "comparisons" },
      h("h2", null, "Comparisons ", h("span", { class: "muted" }, "· " + view.comparisons.length)),
      view.comparisons.length
        ? h("ul", { class: "links" }, view.comparisons.map((one) => h("li", null, h("a", { href: one.href }, one.base + " → " + one.candidate))))
        : h("p", { class: "muted" }, "None yet: run the command above."));
  }

  /* The table of runs. */

  const search = h("input", { type: "search", id: "search", placeholder: Convy.placeholder("Search runs"), "aria-label": "Search runs" });
  const agentSelect = h("select", { id: "filter-agent", "aria-label": "Filter by agent" }, h("option", { value: "" }, "every agent"), view.agents.map((agent) => h("option", { value: agent }, agent)));
  const count = h("span", { class: "count", "aria-live": "polite" });
  const thead = h("thead");
  const tbody = h("tbody");
  const table = h("table", { class: "grid runs", id: "runs" }, thead, tbody);
  let visible = [];
  let cursor = -1;

  const COLUMNS = [
    ["Agent", "agent", false],
    ["Run", "run", false],
    ["Started", "started", false],
    ["Status", "status", false],
    ["Pass rate", "rate", true],
    ["Passed", "passed", true],
    ["Scenarios", "scenarios", true],
    ["Attempts", "attempts", true],
    ["Tokens", "tokens", true],
    ["Cost", "cost", true],
    ["Time", "seconds", true],
  ];
  const SORT = {
    agent: (row) => row.agent,
    run: (row) => row.run,
    started: (row) => row.started,
    status: (row) => row.status,
    rate: (row) => (row.rate ? row.rate.estimate : null),
    passed: (row) => row.passed,
    scenarios: (row) => row.scenarios,
    attempts: (row) => row.attempts,
    tokens: (row) => row.tokens,
    cost: (row) => (row.cost.amount === null ? null : Number(row.cost.amount)),
    seconds: (row) => row.seconds,
  };

  const rows = runs.map((row) => {
    const link = h("a", { href: row.href, class: "id" }, Convy.idText(row.run));
    const tr = h("tr", { class: "row", tabindex: "-1", "data-run": row.run },
      h("td", null, row.agent),
      h("td", { class: "run-cell" }, link, row.name ? h("div", { class: "run-name" }, row.name) : null),
      h("td", { class: "nowrap" }, fmt.date(row.started)),
      h("td", null, Convy.status("run", row.status, true)),
      h("td", { class: "num" }, h("div", { class: "rate" }, row.rate ? fmt.pct(row.rate.estimate) : "—"), row.rate ? h("div", { class: "interval" }, fmt.span(row.rate)) : null),
      h("td", { class: "num" }, fmt.int(row.passed) + "/" + fmt.int(row.judged)),
      h("td", { class: "num" }, fmt.int(row.scenarios)),
      h("td", { class: "num attempts" }, row.status === "running" && row.planned ? fmt.int(row.attempts) + " of " + fmt.int(row.planned) : fmt.int(row.attempts)),
      h("td", { class: "num" }, fmt.int(row.tokens)),
      h("td", { class: "num" }, fmt.cost(row.cost)),
      h("td", { class: "num" }, fmt.seconds(row.seconds)));
    tr.addEventListener("click", (event) => {
      if (event.target.closest("a")) return;
      link.click();
    });
    tr.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === tr) {
        event.preventDefault();
        event.stopPropagation();
        link.click();
      }
    });
    return { row, tr };
  });

  function sortBy(key) {
    if (state.sort === key) state.dir = state.dir === "asc" ? "desc" : "asc";
    else {
      state.sort = key;
      state.dir = ["agent", "run", "status"].includes(key) ? "asc" : "desc";
    }
    update();
  }

  function draw() {
    Convy.fill(thead, h("tr", null, COLUMNS.map(([label, key, numeric]) => Convy.sortHeader(label, key, state, sortBy, numeric))));
    const words = state.q.toLowerCase().split(/\s+/).filter(Boolean);
    let list = rows.filter(({ row }) => {
      if (state.agent && row.agent !== state.agent) return false;
      const text = (row.agent + " " + row.run + " " + (row.name || "") + " " + row.status + " " + row.started).toLowerCase();
      return words.every((part) => text.includes(part));
    });
    if (state.sort && SORT[state.sort]) {
      const get = SORT[state.sort];
      list = list.slice().sort((a, b) => Convy.compare(get(a.row), get(b.row), state.dir) || a.row.index - b.row.index);
    }
    visible = list.map(({ tr }) => tr);
    if (visible.length && !visible.some((tr) => tr.tabIndex === 0)) visible[0].tabIndex = 0;
    Convy.fill(tbody, ...visible);
    if (!list.length) tbody.appendChild(h("tr", null, h("td", { colspan: COLUMNS.length, class: "empty" }, runs.length ? "No run matches." : "No runs yet: `convy run AGENT` makes one.")));
    count.textContent = list.length === runs.length ? fmt.int(runs.length) + " runs" : fmt.int(list.length) + " of " + fmt.int(runs.length) + " runs";
    for (const card of document.querySelectorAll(".trend-tile")) card.hidden = Boolean(state.agent) && card.dataset.agent !== state.agent;
  }

  function move(step) {
    if (!visible.length) return;
    cursor = Convy.stepped(visible, cursor, step);
    Convy.focusRow(visible, cursor);
  }

  function save() {
    hash.write({ q: state.q, agent: state.agent, sort: state.sort, dir: state.sort ? state.dir : "" });
  }

  function update() {
    save();
    draw();
  }

  function load() {
    const read = hash.read();
    state.q = read.q || "";
    state.agent = view.agents.includes(read.agent) ? read.agent : "";
    state.sort = SORT[read.sort] ? read.sort : "";
    state.dir = read.dir === "asc" ? "asc" : "desc";
    search.value = state.q;
    agentSelect.value = state.agent;
    draw();
  }

  search.addEventListener("input", () => { state.q = search.value; update(); });
  agentSelect.addEventListener("change", () => { state.agent = agentSelect.value; update(); });

  const agentsCount = view.agents.length;
  const playing = runs.filter((row) => row.status === "running");
  const live = Convy.live(playing.length > 0);
  Convy.fill(app,
    h("header", { class: "top" },
      h("div", null,
        h("h1", null, h("span", { class: "brand" }, "convy · "), "runs"),
        facts([
          ["runs", fmt.int(runs.length)],
          ["agents", fmt.int(agentsCount)],
          ["comparisons", fmt.int(view.comparisons.length)],
          ["latest", runs.length ? fmt.date(runs[0].started) : "—"],
        ])),
      h("div", { class: "top-actions" }, Convy.theme.button())),
    playing.length
      ? h("div", { class: "notice" + (live.stale ? " bad" : ""), id: "live" }, h("strong", null, "… " + fmt.int(playing.length) + (playing.length === 1 ? " run is" : " runs are") + " still playing"),
        playing.map((row) => row.agent + " · " + row.run + ": " + fmt.int(row.attempts) + " of " + fmt.int(row.planned) + " attempts").join("; ") + ". " + live.words)
      : null,
    view.skipped.length
      ? h("div", { class: "notice", id: "skipped" }, h("strong", null, "Folders that could not be read as runs"), h("ul", null, view.skipped.map((line) => h("li", null, line))))
      : null,
    h("section", { class: "tiles trends", "aria-label": "Pass rate per agent" },
      Object.entries(view.trends).map(([agent, points]) => trend(agent, points)),
      compareHelp()),
    h("section", null,
      h("h2", null, "Runs ", h("span", { class: "muted" }, "— newest first; a run opens its report")),
      h("div", { class: "controls" }, search, h("label", { class: "field" }, "agent", agentSelect), count),
      Convy.keyHelp([["/", "search"], ["j k ↑ ↓", "move"], ["Enter", "open the report"], ["t", "theme"]]),
      h("div", { class: "table-wrap" }, table)),
    comparisons(),
    h("footer", { class: "foot" }, "Made by convy. Each run's detail stays in its own report; this page holds the summary only."));

  /* Each trend drawn as wide as its box now that the boxes are laid out, and again when they change width. */
  const drawTrends = () => {
    for (const [box, agent, points] of boxes) Convy.fill(box, drawing(agent, points, Math.max(160, Math.floor(box.clientWidth))));
  };
  drawTrends();
  let widthDrawn = window.innerWidth;
  window.addEventListener("resize", () => { if (window.innerWidth !== widthDrawn) { widthDrawn = window.innerWidth; drawTrends(); } });

  Convy.keys({ search: () => { search.focus(); search.select(); }, move, open: () => { if (visible[cursor]) visible[cursor].querySelector("a").click(); } });
  window.addEventListener("hashchange", load);
  load();
  live.begin({ save });
})();
