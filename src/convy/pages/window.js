/* convy pages: the scenario window, and an attempt drawn in full: its dialogue (user, agent, the
   agent's thoughts and tool calls), each claim's decision, its timeline, tokens and cost. Every
   text is a text node, or Markdown drawn as nodes. */

const Scene = (() => {
  const { h, s, add, fmt, status, word, markdown } = Convy;

  /* The window: one <dialog>, opened modal; Esc or the close button shut it. */
  function frame(onClose) {
    const title = h("h2", { id: "window-title", class: "window-title" });
    const tools = h("div", { class: "window-tools" });
    const close = h("button", { type: "button", class: "close", title: "Close (Esc)", "aria-label": "Close the window" }, "✕ Close");
    const body = h("div", { class: "window-body", tabindex: "-1" });
    const dialog = h("dialog", { id: "window", class: "window", "aria-labelledby": "window-title" },
      h("header", { class: "window-head" }, title, tools, close), body);
    close.addEventListener("click", () => dialog.close());
    /* The close event comes in a task of its own after the dialog shut: if the window was opened
       again in between (Esc, then a click at once), that close is stale and must not clear what
       the new window set. */
    dialog.addEventListener("close", () => { if (!dialog.open) onClose(); });
    dialog.addEventListener("click", (event) => {
      if (event.target === dialog) dialog.close();
    });
    document.body.appendChild(dialog);
    return {
      dialog,
      title,
      tools,
      body,
      isOpen() {
        return dialog.open;
      },
      show() {
        if (!dialog.open) {
          dialog.showModal();
          body.focus({ preventScroll: true });  /* nothing to scroll to: no layout forced before the frame */
        }
      },
      close() {
        if (dialog.open) dialog.close();
      },
    };
  }

  /* Packed data (page.py's PackedChunks): the JSON block #id says which chunk holds each scenario,
     and block #id-i holds chunk i, gzipped, in base64. The index is read when first asked
     about, and each chunk read and inflated once, when one of its values is first asked for or
     is likely to be (warm: a row pointed at or focused, the page idle). A chunk inflated is kept
     as its value, so a window whose chunk is ready is drawn whole in the task of its click, with
     no promise between the click and the frame that shows it.
     Records may come written as arrays (views.py's array_like records): a value is read back
     into objects by the index's layout (page.py's PackedLayout), when it is first asked for. */
  function packed(id) {
    let data = null;
    const inflated = new Map();  /* chunk number → the promise of its object */
    const ready = new Map();     /* chunk number → its object, once inflated */
    const objects = new Map();   /* key → its value read back into objects */
    const read = () => {
      if (data === null) data = Convy.json(id) || { count: 0, where: {} };
      return data;
    };
    const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);
    const has = (key) => own(read().where, key);
    /* A value as the layout says: a record's fields by position (an array) or by name, each
       field that holds records read back in turn; a field left out is left out. */
    const held = (value, what, records) => {
      if (what === null || value === null || value === undefined) return value;
      if (Array.isArray(what)) return Array.isArray(value) ? value.map((one) => held(one, what[0], records)) : value;
      const fields = records[what];
      const object = {};
      fields.forEach(([name, inner], i) => {
        const one = Array.isArray(value) ? value[i] : value[name];
        if (one !== undefined) object[name] = held(one, inner, records);
      });
      return object;
    };
    const kept = (found, key) => {
      if (!own(found, key)) return undefined;
      const layout = read().layout;
      if (!layout) return found[key];
      if (!objects.has(key)) objects.set(key, held(found[key], layout.kind, layout.records));
      return objects.get(key);
    };
    const chunk = (at) => {
      if (!inflated.has(at)) {
        inflated.set(at, (async () => {
          if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot decompress the dialogues (no DecompressionStream): open the page in a recent browser");
          const text = Convy.json(id + "-" + at);
          let bytes;
          if (typeof Uint8Array.fromBase64 === "function") bytes = Uint8Array.fromBase64(text);  /* native, where the browser has it */
          else {
            const raw = atob(text);
            bytes = new Uint8Array(raw.length);
            for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
          }
          const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
          const found = JSON.parse(await new Response(stream).text());
          ready.set(at, found);
          return found;
        })());
      }
      return inflated.get(at);
    };
    return {
      has,
      /* A promise of the value kept for key, or of undefined when there is none. */
      get(key) {
        if (!has(key)) return Promise.resolve(undefined);
        return chunk(read().where[key]).then((found) => kept(found, key));
      },
      /* The value kept for key now, as { value }, if its chunk is inflated already; else null. */
      now(key) {
        if (!has(key)) return null;
        const found = ready.get(read().where[key]);
        return found === undefined ? null : { value: kept(found, key) };
      },
      /* Start inflating the chunk that holds key, if it has not been: a promise of when it is
         done (never rejected: a failure is said by get). */
      warm(key) {
        return has(key) ? chunk(read().where[key]).then(() => {}, () => {}) : Promise.resolve();
      },
    };
  }

  function pretty(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (error) {
      return String(text);
    }
  }

  function short(text, length) {
    const one = String(text).replace(/\s+/g, " ");
    return one.length > length ? one.slice(0, length - 1) + "…" : one;
  }

  /* A <details> whose body is drawn when it is first opened (by a click, the expand button or
     code): a window of an attempt holds many collapsed steps, and drawing what nobody has opened
     was most of the time a window took to open. */
  const bodies = new WeakMap();  /* a lazy <details> → the function that draws its body once */

  function lazy(props, summary, body) {
    const box = h("details", props, summary);
    bodies.set(box, () => {
      if (!box.open) return;
      bodies.delete(box);
      add(box, [body()]);
    });
    box.addEventListener("toggle", () => draw(box));
    draw(box);
    return box;
  }

  /* Draw an open lazy <details>'s body now, not when its toggle event comes (a task later). */
  function draw(box) {
    const body = bodies.get(box);
    if (body) body();
  }

  function step(one) {
    if (one.kind === "asked") return pause(one);
    if (one.kind === "thought") {
      return lazy({ class: "step thought" },
        h("summary", null, h("span", { class: "step-kind" }, "✎ thought"), " ", h("span", { class: "muted preview" }, short(one.text, 90))),
        () => markdown(one.text));
    }
    const result = one.result === null || one.result === undefined ? null : one.result;
    /* A call the scenario's own tools served says so, and where their answer came from. */
    const served = one.source ? SOURCES[one.source] || one.source : "";
    const outcome = one.error
      ? h("span", { class: "step-error" }, " → error: " + short(one.error, 50))
      : result === null ? h("span", { class: "muted" }, " → result not reported") : h("span", { class: "muted" }, " → " + short(result, 50));
    return lazy({ class: "step call" },
      h("summary", null,
        h("span", { class: "step-kind" }, "⚙ call"), " ",
        h("code", null, one.name + "(" + short(one.arguments === "{}" ? "" : one.arguments, 70) + ")"),
        outcome,
        one.seconds === null || one.seconds === undefined ? null : h("span", { class: "muted" }, " · " + fmt.seconds(one.seconds)),
        served ? h("span", { class: "muted" }, " · " + served) : null,
        one.traced ? h("span", { class: "muted" }, " · seen in the agent's own spans") : null,
        one.approval ? h("span", { class: one.approval === "denied" ? "step-error" : "muted" }, " · asked approval: " + one.approval) : null),
      () => h("div", { class: "call-body" },
        h("div", { class: "label" }, "arguments"), h("pre", null, pretty(one.arguments)),
        one.error
          ? [h("div", { class: "label" }, "error"), h("pre", null, one.error)]
          : [h("div", { class: "label" }, "result"), result === null ? h("p", { class: "muted" }, "not reported by the agent") : h("pre", null, pretty(result))],
        served ? h("p", { class: "muted" }, served) : null,
        one.traced ? h("p", { class: "muted" }, "seen in the agent's own spans: an execute_tool span it sent showed this call") : null));
  }

  /* A pause the agent made to ask a person: its question, and who answered what. */
  function pause(one) {
    const who = ANSWERERS[one.source] || one.source;
    const answer = one.source === "nobody" ? "nobody answered" + (one.result ? " (taken as " + one.result + ")" : "") : who + " answered " + JSON.stringify(one.result);
    return lazy({ class: "step asked" },
      h("summary", null,
        h("span", { class: "step-kind" }, "✋ asked"), " ",
        h("span", null, short(one.text, 70)),
        h("span", { class: one.result === "deny" || one.source === "nobody" ? "step-error" : "muted" }, " → " + short(answer, 50)),
        one.seconds ? h("span", { class: "muted" }, " · " + fmt.seconds(one.seconds)) : null),
      () => h("div", { class: "call-body" },
        h("div", { class: "label" }, "question"), h("pre", null, one.text),
        one.name ? [h("div", { class: "label" }, "to run"), h("pre", null, one.name + " " + pretty(one.arguments))] : null,
        one.options && one.options.length ? [h("div", { class: "label" }, "options"), h("p", null, one.options.join(" · "))] : null,
        h("div", { class: "label" }, "answer"), h("p", null, answer)));
  }

  const ANSWERERS = {
    scenario: "the scenario's approvals",
    user: "the simulated user",
  };

  const SOURCES = {
    simulated: "answered by a model playing the scenario's tool (simulate: true)",
    denied: "not run: the person the agent asked said no",
    fixture: "answered by the scenario's tool: one of its answers",
    default: "answered by the scenario's tool: its default answer",
    unanswered: "the scenario's tool has no answer declared for these arguments",
    invalid: "the scenario's tool refused arguments that do not fit its parameters",
    unknown: "the scenario declares no tool of that name",
    claimed: "reported by the agent; the scenario's tool never received it",
  };


  /* A turn's steps, collapsed, under a line that says how many of each kind. */
  function steps(one, open) {
    if (!one.steps.length) return null;
    const { thoughts, calls, asked } = one;
    const said = [thoughts ? thoughts + (thoughts === 1 ? " thought" : " thoughts") : "", calls ? calls + (calls === 1 ? " tool call" : " tool calls") : "", asked ? asked + (asked === 1 ? " pause to ask" : " pauses to ask") : ""].filter(Boolean).join(", ");
    return lazy({ class: "steps", open: open || null },
      h("summary", null, "Agent's steps: " + said),
      () => h("div", { class: "step-list" }, one.steps.map(step)));
  }

  function message(who, label, text, meta) {
    return h("div", { class: "msg msg-" + who },
      h("div", { class: "who" }, label),
      markdown(text),
      meta ? h("div", { class: "meta" }, meta) : null);
  }

  function turn(one, number, open) {
    const userMeta = one.scripted
      ? "scripted"
      : ["simulated", fmt.seconds(one.user_seconds), fmt.tokens(one.user_tokens)].filter((x) => x && x !== "—").join(" · ");
    const agentMeta = ["answered in " + fmt.seconds(one.agent_seconds), fmt.tokens(one.agent_tokens), "cost " + fmt.cost(one.cost)].filter((x) => x && x !== "—").join(" · ");
    return h("article", { class: "turn", "data-turn": number },
      h("div", { class: "turn-number" }, "Turn " + number),
      message("user", "User", one.user, userMeta),
      steps(one, open),
      message("agent", "Agent", one.agent, agentMeta));
  }

  /* Evidence: the words a judge quoted, looked for in the dialogue as Python's dialog.plain()
     compares them — each curly, angled or low quotation mark (and ` and ´) read as the plain one,
     every run of whitespace (what Python's \s matches) as one space — and marked where they are.

     The match is made in the message's own text, as Python made it, then carried to the text the
     reader sees: each text node Markdown drew is a stretch of that text (the marks that make bold,
     code or a list are left out between them; a link's address is drawn inside " (…)"), so it is
     found in the text from where the one before it ended (a list item's after its marker), and the
     marks are drawn in the nodes the match covers. A line of a paragraph that Markdown drew
     without its "# " is not such a stretch; a quote that is not in the text as written but is in
     the drawn text (its Markdown left out) is marked in the drawn text. Marks are <mark> elements
     holding text nodes, never parsed HTML. */
  const SPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
  const MARKS = new Map([["\u201c", '"'], ["\u201d", '"'], ["\u201e", '"'], ["\u00ab", '"'], ["\u00bb", '"'],
    ["\u2018", "'"], ["\u2019", "'"], ["\u201a", "'"], ["`", "'"], ["\u00b4", "'"]]);

  /* text as plain() makes it, with the position in text each of its characters came from (a
     space made of a run of whitespace: where the run began). */
  function plained(text) {
    const out = [];
    const from = [];
    let gap = -1;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (SPACE.test(c)) {
        if (gap < 0) gap = i;
        continue;
      }
      if (gap >= 0 && out.length) { out.push(" "); from.push(gap); }
      gap = -1;
      out.push(MARKS.get(c) || c);
      from.push(i);
    }
    return { text: out.join(""), from };
  }

  function plain(text) {
    return plained(String(text)).text;
  }

  /* Where the plain quote q is in text: [start, end) in text, for each place (a hundred at most). */
  function places(seen, q) {
    const found = [];
    if (!q) return found;
    for (let at = seen.text.indexOf(q); at >= 0 && found.length < 100; at = seen.text.indexOf(q, at + q.length)) {
      found.push([seen.from[at], seen.from[at + q.length - 1] + 1]);
    }
    return found;
  }

  /* The text nodes of a drawn message, each with where its characters are in the message's text
     (start; -1 when it is not a stretch of it) and in the drawn text (at). */
  function located(box, text) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    const nodes = [];
    const items = new Set();
    const marker = /(?:^|\n)\s*(?:[-*+]|\d+[.)])\s+/g;  /* what starts a list item, as markdown() reads it */
    let after = 0, drawn = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentNode;
      const item = parent && parent.closest ? parent.closest("li") : null;
      if (item && !items.has(item)) {
        /* A list item's first text starts after its marker: "1. 1" draws "1", not the marker's "1". */
        items.add(item);
        marker.lastIndex = after;
        if (marker.exec(text)) after = marker.lastIndex;
      }
      const around = parent && parent.classList && parent.classList.contains("url") ? 2 : 0;  /* " (" and ")" */
      const own = around ? node.data.slice(around, -1) : node.data;
      const start = own ? text.indexOf(own, after) : -1;
      if (start >= 0) after = start + own.length;
      nodes.push({ node, start: start < 0 ? -1 : start - around, at: drawn });
      drawn += node.data.length;
    }
    return nodes;
  }

  /* A drawn message with the ranges it is given marked: each as [start, end, current], in the
     message's text (written) or in the drawn text (drawn). */
  function paint(box, nodes, written, drawn) {
    const cuts = new Map();  /* node → [from, to, current] in its own characters */
    const cut = (node, from, to, current) => {
      if (from >= to) return;
      if (!cuts.has(node)) cuts.set(node, []);
      cuts.get(node).push([from, to, current]);
    };
    for (const { node, start, at } of nodes) {
      const length = node.data.length;
      if (start >= 0) for (const [a, b, current] of written) cut(node, Math.max(0, a - start), Math.min(length, b - start), current);
      for (const [a, b, current] of drawn) cut(node, Math.max(0, a - at), Math.min(length, b - at), current);
    }
    for (const [node, list] of cuts) {
      list.sort((x, y) => x[0] - y[0] || y[1] - x[1]);
      const merged = [];
      for (const one of list) {
        const last = merged[merged.length - 1];
        if (last && one[0] <= last[1]) { last[1] = Math.max(last[1], one[1]); last[2] = last[2] || one[2]; } else merged.push(one.slice());
      }
      const text = node.data;
      const pieces = [];
      let at = 0;
      for (const [from, to, current] of merged) {
        if (from > at) pieces.push(document.createTextNode(text.slice(at, from)));
        pieces.push(h("mark", { class: "quoted" + (current ? " current" : "") }, text.slice(from, to)));
        at = to;
      }
      if (at < text.length) pieces.push(document.createTextNode(text.slice(at)));
      node.replaceWith(...pieces);
    }
    return box;
  }

  /* An attempt's quoted evidence in its dialogue: the quotes shown (pinned by a "Show" control or
     "Show every quote") and the one that is current (a decision pointed at or focused, else the
     last pinned), whose marks stand out; each message is drawn again with its marks when they
     change, and only then. */
  function evidenceOf(d) {
    const pinned = new Set();
    let pointed = null, last = null, root = null;
    const kept = new Map();  /* "turn:side" → its text, it made plain, its drawn text made plain, what its marks were drawn for */
    const message = (one, i, side) => {
      const key = i + ":" + side;
      if (!kept.has(key)) {
        const said = one[side];
        kept.set(key, { text: String(said === null || said === undefined ? "" : said).replace(/\r\n?/g, "\n"), seen: null, shown: null, painted: "[[],[]]" });
      }
      return kept.get(key);
    };
    const refresh = () => {
      if (!root) return;
      const current = pointed !== null ? pointed : last;
      const quotes = [...pinned];
      if (pointed !== null && !pinned.has(pointed)) quotes.push(pointed);
      (d.turns || []).forEach((one, i) => {
        for (const side of ["user", "agent"]) {
          const box = root.querySelector("article.turn[data-turn='" + (i + 1) + "'] .msg-" + side + " > .md");
          if (!box) continue;
          const said = message(one, i, side);
          const written = [], drawn = [], elsewhere = [];
          if (quotes.length && !said.seen) said.seen = plained(said.text);
          for (const quote of quotes) {
            const at = places(said.seen, plain(quote));
            at.forEach(([a, b]) => written.push([a, b, quote === current]));
            if (!at.length) elsewhere.push(quote);
          }
          if (elsewhere.length) {
            if (!said.shown) said.shown = plained(located(markdown(said.text), said.text).map((node) => node.node.data).join(""));
            for (const quote of elsewhere) places(said.shown, plain(quote)).forEach(([a, b]) => drawn.push([a, b, quote === current]));
          }
          const wanted = JSON.stringify([written, drawn]);
          if (said.painted === wanted) continue;
          said.painted = wanted;
          let fresh = markdown(said.text);
          if (written.length || drawn.length) fresh = paint(fresh, located(fresh, said.text), written, drawn);
          box.replaceWith(fresh);
        }
      });
    };
    return {
      attach(element) {
        root = element;
        refresh();
      },
      /* Make a quote current while a decision is pointed at or focused (null: none), without
         moving the view. */
      point(quote) {
        if (pointed === quote) return;
        pointed = quote;
        refresh();
      },
      /* Show quotes or hide them; shown, the current marks are scrolled into view. Whether any
         mark is current. */
      /* Whether a quote is pinned. */
      has(quote) {
        return pinned.has(quote);
      },
      pin(quotes, on) {
        for (const quote of quotes) if (on) pinned.add(quote); else pinned.delete(quote);
        if (on) last = quotes[0];
        else if (quotes.includes(last)) last = null;
        refresh();
        const first = on && root ? root.querySelector("mark.quoted.current") : null;
        if (first) first.scrollIntoView({ block: "center", behavior: "instant" });
        return Boolean(first);
      },
    };
  }

  /* What a decision (or a vote) quoted, and whether convy found it in the dialogue. */
  function evidence(one, shown) {
    if (one.evidence === null || one.evidence === undefined) return null;
    const found = one.found === true;
    const quote = h("q", { class: "quote" }, one.evidence);
    // Found is not enough: a quote too short, a piece of a word or the user's words is flagged (dialog.Quote).
    const flag = !found
      ? h("span", { class: "flag flag-missing" }, "⚠ evidence not in the dialogue")
      : one.weak
        ? h("span", { class: "flag flag-missing flag-weak" }, "⚠ weak evidence: " + one.weak)
        : h("span", { class: "flag flag-found" }, "✓ in the dialogue");
    let show = null;
    if (found && shown) {
      const note = h("span", { class: "muted small shown-note", role: "status" });
      const on = shown.has(one.evidence);
      show = [h("button", { type: "button", class: "show-quote", "aria-pressed": String(on), title: "Mark these words in the dialogue and scroll to them",
        onclick: (event) => {
          const button = event.currentTarget;
          const on = button.getAttribute("aria-pressed") !== "true";
          const marked = shown.pin([one.evidence], on);
          button.setAttribute("aria-pressed", String(on));
          button.textContent = on ? "Hide in the dialogue" : "Show in the dialogue";
          note.textContent = on && !marked ? "not located in the drawn text" : "";
        } }, on ? "Hide in the dialogue" : "Show in the dialogue"), note];
    }
    return h("div", { class: "evidence" + (found && !one.weak ? " found" : " missing") },
      h("span", { class: "label" }, "Evidence: "), quote, " ", flag, show ? " " : null, show);
  }

  /* The votes a decision was made from, collapsed: how they fell, then each one in full. */
  function votes(one, shown) {
    if (!one.votes || !one.votes.length) return null;
    const split = one.split || [];
    const whole = split[0];
    const fell = (part) => part.held + " of " + part.votes + " held";
    const said = whole ? fell(whole) : one.votes.length + " votes";
    const agreed = whole && (whole.held === 0 || whole.held === whole.votes);
    /* "tied" is what the report and the docs call a split: as many votes each way, nothing decided;
       "divided" a majority that was not unanimous. */
    const how = !whole ? "" : agreed ? ", unanimous" : whole.held * 2 === whole.votes ? ", tied: nothing decided" : ", divided";
    const judges = split.slice(1).map((part) => part.judge + ": " + fell(part)).join(" · ");
    return lazy({ class: "votes" },
      h("summary", null,
        h("span", { class: "split" + (agreed ? "" : " mixed") }, "Votes: " + said + how),
        judges ? h("span", { class: "muted" }, " — " + judges) : null),
      () => h("ol", { class: "vote-list" }, one.votes.map((vote) => h("li", { class: "vote" },
        h("div", { class: "decision-head" },
          h("span", { class: "st st-" + (vote.held ? "held" : "failed") }, vote.held ? "✓ held" : "✗ failed"),
          h("span", { class: "tag" }, "by " + vote.judge),
          vote.grade === null || vote.grade === undefined ? null : h("span", { class: "tag" }, "grade: " + vote.grade),
          vote.confidence === null || vote.confidence === undefined ? null : h("span", { class: "tag" }, "confidence " + fmt.pct(vote.confidence, 0))),
        vote.reason ? h("div", { class: "reason" }, markdown(vote.reason)) : null,
        evidence(vote, shown)))));
  }

  /* Each decision: whether it held, its reason, its evidence and votes. d: the attempt, for the
     labelling controls (pages/labels.js) beside each decision; with shown (the attempt's evidence),
     a decision pointed at or focused marks its quote in the dialogue. */
  function decisions(list, d, shown) {
    if (!list.length) return h("p", { class: "muted" }, "No claims were decided.");
    return h("ul", { class: "decisions" }, list.map((one) => {
      const mark = one.held ? ["✓", "held", "held"] : ["✗", "failed", "failed"];
      const untrusted = !one.trusted;
      const item = h("li", { class: "decision" + (untrusted ? " untrusted" : "") },
        h("div", { class: "decision-head" },
          h("span", { class: "st st-" + (untrusted ? "none" : mark[2]) }, (untrusted ? "– " : mark[0] + " ") + mark[1] + (untrusted ? ", not counted" : "")),
          h("span", { class: "claim" }, one.claim),
          h("span", { class: "tag" }, "by " + one.by),
          one.grade === null || one.grade === undefined ? null : h("span", { class: "tag" }, "grade: " + one.grade),
          one.confidence === null || one.confidence === undefined ? null : h("span", { class: "tag" }, "confidence " + fmt.pct(one.confidence, 0)),
          typeof Labels === "undefined" ? null : Labels.control(d, one)),
        one.reason ? h("div", { class: "reason" }, markdown(one.reason)) : null,
        evidence(one, shown),
        votes(one, shown));
      if (shown && one.found === true) {
        const point = () => shown.point(one.evidence);
        const leave = () => shown.point(null);
        item.addEventListener("mouseenter", point);
        item.addEventListener("mouseleave", leave);
        item.addEventListener("focusin", point);
        item.addEventListener("focusout", leave);
      }
      return item;
    }));
  }

  /* A control that shows every quote found in the dialogue at once, or hides them again. */
  function everyQuote(list, shown) {
    const quotes = [...new Set(list.flatMap((one) => [one, ...(one.votes || [])]).filter((one) => one.found === true).map((one) => one.evidence))];
    if (!quotes.length) return null;
    return h("button", { type: "button", class: "every-quote", "aria-pressed": "false", onclick: (event) => {
      const button = event.currentTarget;
      const on = button.getAttribute("aria-pressed") !== "true";
      shown.pin(quotes, on);
      button.setAttribute("aria-pressed", String(on));
      button.textContent = on ? "Hide the quoted evidence" : "Show every quote (" + quotes.length + ")";
      for (const other of button.closest(".attempt").querySelectorAll("button.show-quote")) {
        other.setAttribute("aria-pressed", String(on));
        other.textContent = on ? "Hide in the dialogue" : "Show in the dialogue";
      }
    } }, "Show every quote (" + quotes.length + ")");
  }

  const LANES = ["agent", "user", "judge", "waiting", "traced"];

  /* The attempt's time drawn: one lane each for the agent, the user model, the judge and the
     waits on busy services. */
  function timeline(d) {
    /* Each turn's user model and agent spans, from the turn's start and seconds; then the rest
       (the judge's, the waits') as Python gave them. */
    const spans = [];
    (d.turns || []).forEach((one, i) => {
      if (!one.scripted) spans.push({ lane: "user", start: one.user_start, seconds: one.user_seconds, label: "user model, turn " + (i + 1) });
      spans.push({ lane: "agent", start: one.agent_start, seconds: one.agent_seconds, label: "agent, turn " + (i + 1) });
    });
    spans.push(...(d.spans || []));
    /* The agent's own spans have a lane where it sent some (receive_traces). */
    const lanes = LANES.filter((name) => name !== "traced" || spans.some((one) => one.lane === "traced"));
    let end = d.seconds || 0;
    for (const one of spans) end = Math.max(end, one.start + one.seconds);
    if (!(end > 0)) return h("p", { class: "muted" }, "No time was recorded.");
    /* Drawn as wide as its frame, in px, so that its lane names and times keep their size on any
       screen (a drawing 1000 wide scaled to a phone's frame had 4 px text): first 1000 wide, then
       again at its frame's width once laid out, and whenever that changes (a window opened, a
       <details> unfolded, a phone turned). */
    const frame = h("div", { class: "timeline-frame" });
    let drawn = 0;
    const draw = (width) => {
      drawn = width;
      Convy.fill(frame, drawing(width));
    };
    const lane = 20, top = 4;
    const height = top + lanes.length * lane + 18;
    const drawing = (width) => {
    const left = 78, right = 12;
    const x = (t) => left + (t / end) * (width - left - right);
    const svg = s("svg", { class: "timeline", width, height, viewBox: "0 0 " + width + " " + height, role: "img", "aria-label": "Timeline of attempt " + d.attempt + ": " + spans.length + " spans over " + fmt.seconds(end) });
    lanes.forEach((name, i) => {
      const y = top + i * lane;
      svg.appendChild(s("rect", { class: "lane-bg", x: left, y: y + 2, width: width - left - right, height: lane - 4 }));
      svg.appendChild(s("text", { class: "lane-name", x: 4, y: y + lane / 2 + 4 }, name));
    });
    for (const one of spans) {
      const i = lanes.indexOf(one.lane);
      if (i < 0) continue;
      const y = top + i * lane;
      const rect = s("rect", { class: "span span-" + one.lane, x: x(one.start), y: y + 3, width: Math.max(2, x(one.start + one.seconds) - x(one.start)), height: lane - 6, rx: 2 });
      rect.appendChild(s("title", null, one.label + " · starts at " + fmt.seconds(one.start) + " · " + fmt.seconds(one.seconds)));
      svg.appendChild(rect);
    }
    const axis = top + lanes.length * lane + 13;
    svg.appendChild(s("text", { class: "axis", x: left, y: axis }, "0"));
    svg.appendChild(s("text", { class: "axis", x: width - right, y: axis, "text-anchor": "end" }, fmt.seconds(end)));
    return svg;
    };
    draw(1000);
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        const width = Math.floor(frame.clientWidth);
        if (width > 0 && Math.abs(width - drawn) >= 1) draw(Math.max(160, width));
      }).observe(frame);
    }
    const list = lazy({ class: "span-list" },
      h("summary", null, "Timeline as a list"),
      () => h("table", { class: "grid small" },
        h("thead", null, h("tr", null, h("th", null, "lane"), h("th", null, "what"), h("th", { class: "num" }, "starts at"), h("th", { class: "num" }, "took"))),
        h("tbody", null, spans.map((one) => h("tr", null, h("td", null, one.lane), h("td", null, one.label), h("td", { class: "num" }, fmt.seconds(one.start)), h("td", { class: "num" }, fmt.seconds(one.seconds)))))));
    const LEGEND = { waiting: "waiting on a busy service", user: "user model", traced: "the agent's own spans" };
    const legend = h("div", { class: "legend small" }, lanes.map((name) => h("span", null, h("i", { class: "swatch span-" + name }), LEGEND[name] || name)));
    return h("div", { class: "timeline-box" }, frame, legend, list);
  }

  /* One attempt in full. */
  /* The simulated user's faults (issue 11): each marked in the turn where it went wrong (one past
     the last turn: after the dialogue, for how it ended), and listed with the decisions. Text only. */
  const CHECKS = {
    empty: "said nothing", repeated: "repeated itself", leaked: "said its instructions",
    first_turn_stop: "stopped before it said anything", no_stop: "never said it was done",
    role_swap: "spoke as the agent", stopped_on_question: "stopped on the agent's question",
    unsupported: "said what its instructions do not support",
  };

  function userFault(fault) {
    return h("div", { class: "user-fault", "data-check": fault.check, "data-turn": fault.turn },
      h("strong", null, "⚠ The simulated user " + (CHECKS[fault.check] || fault.check) + " (" + fault.check + ")"),
      fault.detail ? h("span", { class: "detail" }, fault.detail) : null,
      h("span", { class: "muted" }, fault.by === "model" ? " · found by a model" : " · found by code"));
  }

  function userFaults(d) {
    const faults = d.faults || [], unchecked = d.unchecked || [];
    if (!faults.length && !unchecked.length) return null;
    return h("div", { class: "notice user-faults" },
      h("strong", null, "The simulated user"),
      h("ul", null,
        faults.map((fault) => h("li", null, (fault.turn > d.turns.length ? "After turn " + d.turns.length : "Turn " + fault.turn) + " · " + fault.check + (fault.detail ? ": " + fault.detail : ""))),
        unchecked.map((said) => h("li", { class: "muted" }, "not decided: " + said))));
  }

  function attempt(d, options) {
    const open = options && options.open;
    const head = h("div", { class: "attempt-head" },
      status("attempt", d.status, true),
      d.why ? h("span", null, word("why", d.why)) : null,
      d.cause ? h("span", { class: "badge cause cause-" + d.cause, title: "whose it was that it did not pass" }, "cause: " + word("cause", d.cause)) : null,
      h("span", { class: "muted" }, "stop: " + Convy.stopWord(d)),
      h("span", { class: "muted" }, "started " + fmt.date(d.started)),
      h("span", { class: "muted" }, "took " + fmt.seconds(d.seconds)),
      h("span", { class: "muted" }, "tokens " + fmt.tokens(d.tokens)),
      h("span", { class: "muted" }, "cost " + fmt.cost(d.cost) + (d.cost && !d.cost.complete ? " (" + fmt.costNote(d.cost) + ")" : "")));
    const failed = d.failed_on ? h("div", { class: "notice bad" }, h("strong", null, "✗ The agent failed on this message"), markdown(d.failed_on)) : null;
    const expand = h("button", { type: "button", class: "expand", onclick: (event) => {
      const box = event.target.closest(".attempt");
      const outer = [...box.querySelectorAll("details.steps")];
      const opening = outer.some((one) => !one.open) || [...box.querySelectorAll("details.step")].some((one) => !one.open);
      for (const one of outer) { one.open = opening; draw(one); }
      box.querySelectorAll("details.step").forEach((one) => { one.open = opening; draw(one); });
      event.target.textContent = opening ? "Collapse the steps" : "Expand the steps";
    } }, "Expand the steps");
    const shown = evidenceOf(d);
    const drawn = h("div", { class: "attempt", "data-attempt": d.attempt },
      head,
      failed,
      h("h3", null, "Decisions", " ", everyQuote(d.decisions, shown)),
      decisions(d.decisions, d, shown),
      userFaults(d),
      h("h3", null, "Timeline"),
      timeline(d),
      h("h3", null, "Dialogue ", d.turns.some((t) => t.steps.length) ? expand : null),
      d.turns.length ? d.turns.map((one, i) => {
        const drawn = turn(one, i + 1, open);
        for (const fault of d.faults || []) if (fault.turn === i + 1) drawn.insertBefore(userFault(fault), drawn.children[1]);
        return drawn;
      }) : h("p", { class: "muted" }, "No turn was played."),
      (d.faults || []).filter((fault) => fault.turn > d.turns.length).map(userFault),
      state(d));
    shown.attach(drawn);
    return drawn;
  }

  /* The scenario's tools' state as the dialogue left it (docs/tools.md), folded: what a check of
     the state was decided on, every path of it, not only the first that differed. */
  function state(d) {
    if (d.state === null || d.state === undefined) return null;
    return lazy({ class: "tools-state" },
      h("summary", null, h("strong", null, "The tools' state at the end")),
      () => h("pre", null, pretty(d.state)));
  }

  return { frame, packed, attempt, turn, decisions, timeline, steps, message, plain };
})();
