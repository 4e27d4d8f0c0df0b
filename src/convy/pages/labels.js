/* convy pages: human labels. In a report's scenario window a person marks each decision of a
   claim right or wrong; the marks are kept in this browser (localStorage, one entry per run, each
   mark keyed by the dialogue's fingerprint and the claim) and downloaded as a labels file, which
   `convy labels add RUN FILE` keeps in the run's folder (labels.py says its format). A page
   opened from disk cannot write a file, so the download is the way out.
   The report's agreement section (judge against people) and the comparison's (two judges on the
   same labels) are drawn here too. Every text is inserted as text. */

const Labels = (() => {
  const { h, fmt } = Convy;
  let run = null;            /* { agent, id }: the run whose report this is; none on other pages */
  let marks = new Map();     /* fingerprint + "\n" + claim → the label, as the file holds it */
  let kept = true;           /* whether the browser keeps them (storage may be refused) */

  const storageKey = () => "convy-labels:" + JSON.stringify([run.agent, run.id]);
  const keyOf = (fingerprint, claim) => fingerprint + "\n" + claim;

  function read() {
    try {
      const text = localStorage.getItem(storageKey());
      const data = text ? JSON.parse(text) : null;
      const list = data && Array.isArray(data.labels) ? data.labels : [];
      marks = new Map(list.filter((one) => one && typeof one.fingerprint === "string" && typeof one.claim === "string")
        .map((one) => [keyOf(one.fingerprint, one.claim), one]));
    } catch (error) {
      kept = false;
    }
  }

  function write() {
    try {
      localStorage.setItem(storageKey(), JSON.stringify({ version: 1, labels: [...marks.values()] }));
      kept = true;
    } catch (error) {
      kept = false;  /* said beside the count: download before closing the page */
    }
    counted();
  }

  /* The page's run: labels are made on it, and kept under it. Another tab of the same report
     keeps its marks under the same key: when it writes, this page reads them again and redraws,
     so neither tab shows, or later writes back, a set the other has changed. */
  function begin(agent, id) {
    run = { agent, id };
    read();
    window.addEventListener("storage", (event) => {
      /* Not kept (storage refused a write): the marks in memory are the only copy. */
      if (event.key !== storageKey() || !kept) return;
      read();
      redrawn();
      counted();
    });
  }

  /* What a person said of this decision: "right", "wrong", or "" when unmarked. The label keeps
     the truth of the claim in the dialogue, so a decision of the same dialogue elsewhere (another
     attempt with the same words) is right when it says the same. */
  function said(d, one) {
    const label = marks.get(keyOf(d.fingerprint, one.claim));
    if (!label) return "";
    const truth = label.right ? label.held : !label.held;
    return one.held === truth ? "right" : "wrong";
  }

  /* The two toggle buttons of a decision; pressing the pressed one takes the mark back. None for
     a decision made by code (a check): it is what the dialogue holds, not a model's reading of it. */
  function control(d, one) {
    if (!run || !d || !d.fingerprint || one.markable === false || one.by === "code") return null;
    const group = h("span", { class: "label-marks", role: "group", "aria-label": "Your label of this decision" });
    const draw = () => {
      const now = said(d, one);
      Convy.fill(group,
        button("right", "✓ right", "The decision is right", now),
        button("wrong", "✗ wrong", "The decision is wrong", now));
    };
    group.drawMarks = draw;
    controls.add(new WeakRef(group));
    const button = (value, text, title, now) => h("button", {
      type: "button",
      class: "label-mark label-" + value,
      title: now === value ? title + " (press again to take the mark back)" : title,
      "aria-pressed": now === value ? "true" : "false",
      onclick: () => {
        const key = keyOf(d.fingerprint, one.claim);
        if (kept) read();  /* what another tab has kept since, so this write does not undo it */
        if (said(d, one) === value) marks.delete(key);
        else marks.set(key, { fingerprint: d.fingerprint, scenario: d.scenario, attempt: d.attempt, claim: one.claim, held: one.held, right: value === "right", at: new Date().toISOString() });
        write();
        draw();
        const again = group.querySelector(".label-" + value);
        if (again) again.focus();
      },
    }, text);
    draw();
    return group;
  }

  /* The labels file: what `convy labels add` reads. */
  function file() {
    return { version: 1, run: { agent: run.agent, id: run.id }, labels: [...marks.values()] };
  }

  function download() {
    const blob = new Blob([JSON.stringify(file(), null, 1) + "\n"], { type: "application/json" });
    const link = h("a", { download: "convy-labels-" + run.agent + "-" + run.id + ".json", hidden: "" });
    link.href = URL.createObjectURL(blob);  /* an object URL of the page's own Blob: h() lets no scheme through */
    /* Beside the button: a modal window makes the rest of the page inert, and a link there
       would not be followed. */
    (document.querySelector("dialog[open]") || document.body).appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  }

  /* What a set of weak references still holds, those gone dropped from it as it is walked. */
  function* alive(held) {
    for (const one of [...held]) {
      const value = one.deref();
      if (value) yield value;
      else held.delete(one);
    }
  }

  /* Every decision's toggles made, held weakly, each with its own drawing: redrawn when another
     tab changes the marks. */
  const controls = new Set();

  function redrawn() {
    for (const group of alive(controls)) group.drawMarks();
  }

  /* Every labels control made, held weakly: one drawn ahead for a window (report.js's prepare)
     is not in the document yet, and must show the count when it is. */
  const tools = new Set();

  function counted() {
    for (const one of alive(tools)) {
      one.querySelector(".labels-count").textContent = words();
      one.querySelector(".labels-download").disabled = marks.size === 0;
    }
  }

  function words() {
    const n = marks.size;
    return (n === 1 ? "1 label" : fmt.int(n) + " labels") + (kept ? "" : " (not kept by this browser: download them)");
  }

  /* The "labels" control: how many are marked, and the download. Drawn in the page's header and
     in the window's tools; each shows the same count. */
  function tool() {
    if (!run) return null;
    const count = h("span", { class: "labels-count", "aria-live": "polite" }, words());
    const save = h("button", { type: "button", class: "labels-download", title: "Download your labels as a file for `convy labels add " + run.id + " FILE`", disabled: marks.size === 0 || null, onclick: download }, "⤓ Download labels");
    const made = h("span", { class: "labels-tool" }, count, " ", save);
    tools.add(new WeakRef(made));
    return made;
  }

  const ratio = (score) => score.accuracy ? fmt.pct(score.accuracy.estimate, 0) + " " + fmt.span(score.accuracy) : "—";
  const kappa = (score) => score.kappa
    ? score.kappa.estimate.toFixed(2) + " [" + score.kappa.low.toFixed(2) + ", " + score.kappa.high.toFixed(2) + "]"
    : "—";  /* undefined, or saying nothing: the reading says which */

  /* A score's cells; with ``worded`` its reading in a cell of its own, else (two judges side by
     side, where the readings would crowd the numbers) as the κ cell's title. */
  function scoreCells(score, worded = true) {
    const cells = [
      h("td", { class: "num" }, fmt.int(score.agree) + "/" + fmt.int(score.labelled)),
      h("td", { class: "num nowrap" }, ratio(score)),
      h("td", { class: "num nowrap", title: score.reading }, kappa(score))];
    if (worded) cells.push(h("td", { class: "small muted" }, score.reading));
    return cells;
  }

  /* The report's judge–human agreement (views.AgreementView), with each disagreement a button
     that opens its attempt's window. */
  function agreement(view, open) {
    if (!view) return null;
    const rows = [view.overall, ...view.claims];
    const notes = [
      "labels of " + fmt.int(view.labels) + " claims in distinct dialogues known (this run's and its sources')",
      view.unmatched ? fmt.int(view.unmatched) + " of dialogues or claims not in this run" : "",
      view.broken ? fmt.int(view.broken) + " lines of labels.jsonl unreadable, left out" : ""].filter(Boolean).join(" · ");
    return h("section", { class: "agreement", id: "agreement" },
      h("h2", null, "Judge against people ", h("span", { class: "muted" }, "— decisions people labelled right or wrong")),
      h("p", { class: "small muted" }, notes),
      h("div", { class: "table-wrap" }, h("table", { class: "grid" },
        h("thead", null, h("tr", null,
          h("th", { scope: "col" }, "scenario · claim"), h("th", { scope: "col" }, "by"),
          h("th", { scope: "col", class: "num" }, "agree"), h("th", { scope: "col", class: "num" }, "accuracy [95% Wilson]"),
          h("th", { scope: "col", class: "num" }, "Cohen's κ [95%]"), h("th", { scope: "col" }, "reading"))),
        h("tbody", null, rows.map((row) => h("tr", { class: row.claim ? "" : "overall" },
          h("th", { scope: "row" }, row.claim ? [h("span", { class: "muted" }, row.scenario + " · "), row.claim] : "every claim"),
          h("td", null, row.by),
          ...scoreCells(row.score)))))),
      view.disagreements.length
        ? h("details", { class: "disagreements", open: "" },
          h("summary", null, fmt.int(view.disagreements.length + view.more) + " decisions people found wrong"),
          h("ul", null, view.disagreements.map((one) => h("li", null,
            h("button", { type: "button", class: "link", onclick: () => open(one.scenario, String(one.attempt)) }, one.scenario + " #" + one.attempt),
            " ", h("span", { class: "claim" }, one.claim),
            h("span", { class: "muted" }, " — " + (one.decided ? "held" : "failed") + " by the " + (one.by === "code" ? "check" : "judge") + ", people: " + (one.truth ? "held" : "failed"))))),
          view.more ? h("p", { class: "muted small" }, "and " + fmt.int(view.more) + " more") : null)
        : h("p", { class: "muted small" }, "People agreed with every decision they labelled."));
  }

  /* The comparison's two judges against the same labels (views.JudgesView). */
  function judges(view, base, candidate) {
    if (!view) return null;
    const head = (name) => [h("th", { scope: "col", class: "num" }, name + ": agree"), h("th", { scope: "col", class: "num" }, "accuracy [95% Wilson]"), h("th", { scope: "col", class: "num", title: "Cohen's κ; its reading in words is the cell's title" }, "Cohen's κ [95%]")];
    return h("section", { class: "agreement", id: "judges" },
      h("h2", null, "Judges against people ", h("span", { class: "muted" }, "— the same " + fmt.int(view.labels) + " labelled dialogue claims")),
      h("div", { class: "table-wrap" }, h("table", { class: "grid" },
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "scenario · claim"), ...head(base), ...head(candidate))),
        h("tbody", null, [view.overall, ...view.claims].map((row) => h("tr", { class: row.claim ? "" : "overall" },
          h("th", { scope: "row" }, row.claim ? [h("span", { class: "muted" }, row.scenario + " · "), row.claim] : "every claim"),
          ...scoreCells(row.base, false), ...scoreCells(row.candidate, false)))))));
  }

  return { begin, control, tool, agreement, judges, file };
})();
