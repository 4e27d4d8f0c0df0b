"use strict";
/* convy pages: shared helpers. Every text from the data goes in as a text node; nothing here
   ever parses a string as HTML. Python computed every number: these only format and draw. */

const Convy = (() => {
  const SVG = "http://www.w3.org/2000/svg";

  /* Nodes. */

  function add(node, kids) {
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
    }
    return node;
  }

  function set(node, props) {
    if (!props) return node;
    for (const [key, value] of Object.entries(props)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.setAttribute("class", value);
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else if (key === "href") node.setAttribute("href", safeHref(value));
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    return node;
  }

  /* Empty a node and put kids in it: strings as text nodes, null and false left out. */
  function fill(node, ...kids) {
    node.replaceChildren();
    return add(node, kids);
  }

  /* h("div", {class: "x"}, "text", child...): an element with text nodes for strings. */
  function h(tag, props, ...kids) {
    return add(set(document.createElement(tag), props), kids);
  }

  function s(tag, props, ...kids) {
    return add(set(document.createElementNS(SVG, tag), props), kids);
  }

  /* An id (a scenario's, a run's) as text that may wrap only where a word of it ends: after a
     "/", "-", "_", "." or " ·" (a <wbr> there), never in the middle of a word. */
  function idText(text) {
    const parts = String(text).split(/(?<=[\/\-_.])/);
    return parts.flatMap((part, i) => (i ? [document.createElement("wbr"), part] : [part]));
  }

  /* Only relative links and page anchors: never a script URL, never the network. */
  function safeHref(value) {
    const text = String(value);
    return /^\s*[a-z][a-z0-9+.-]*:/i.test(text) || text.startsWith("//") ? "#" : text;
  }

  function json(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  /* Formats: numbers as Python gave them, written for people. */

  const fmt = {
    int(value) {
      if (value === null || value === undefined) return "—";
      const text = String(Math.round(Number(value)));
      return text.length < 5 ? text : text.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    },
    pct(value, digits) {
      if (value === null || value === undefined) return "—";
      const places = digits === undefined ? (value === 0 || value === 1 ? 0 : 1) : digits;
      return (value * 100).toFixed(places) + "%";
    },
    points(value) {
      if (value === null || value === undefined) return "—";
      const text = (Math.abs(value) * 100).toFixed(1);
      return (value > 0 ? "+" : value < 0 ? "−" : "±") + text + " pts";
    },
    interval(rate) {
      return rate ? "95% CI " + fmt.pct(rate.low) + "–" + fmt.pct(rate.high) : "no interval";
    },
    span(rate) {
      return rate ? "[" + fmt.pct(rate.low) + ", " + fmt.pct(rate.high) + "]" : "";
    },
    seconds(value) {
      if (value === null || value === undefined) return "—";
      const v = Number(value);
      if (v === 0) return "0 s";
      if (Math.abs(v) < 0.001) return (v * 1e6).toFixed(0) + " µs";
      if (Math.abs(v) < 1) return (v * 1000).toFixed(Math.abs(v) < 0.01 ? 1 : 0) + " ms";
      if (Math.abs(v) < 60) return v.toFixed(Math.abs(v) < 10 ? 2 : 1) + " s";
      const minutes = Math.floor(v / 60);
      if (minutes < 60) return minutes + "m " + Math.round(v - minutes * 60) + "s";
      return Math.floor(minutes / 60) + "h " + (minutes % 60) + "m";
    },
    cost(cost) {
      if (!cost) return "—";
      if (cost.amount === null) return cost.unpriced ? "unpriced" : "—";
      const amount = Number(cost.amount);
      const text = amount === 0 ? "0" : amount >= 1 ? amount.toFixed(2) : amount >= 0.0001 ? amount.toFixed(4) : amount.toPrecision(2);
      return (cost.complete ? "$" : "≥ $") + text;
    },
    /* Whether nothing of a cost is priced: no price known at all, said plainly, not as a warning
       (a warning is for a total that lacks some of its requests). */
    unpriced(cost) {
      return Boolean(cost && cost.amount === null && cost.unpriced && !cost.priced);
    },
    costNote(cost) {
      if (!cost) return "";
      if (cost.amount === null && !cost.unpriced) return "no requests";
      if (cost.complete) return "complete" + (cost.source ? ", " + cost.source : "");
      if (!cost.priced) return "no price known for " + (cost.unpriced === 1 ? "its request" : "its " + fmt.int(cost.unpriced) + " requests");
      return "incomplete: " + fmt.int(cost.unpriced) + " of " + fmt.int(cost.priced + cost.unpriced) + " requests unpriced";
    },
    tokens(tokens) {
      if (!tokens || !tokens.reported) return tokens && tokens.requests ? "not reported" : "—";
      let text = fmt.int(tokens.input) + " in · " + fmt.int(tokens.output) + " out";
      return text;
    },
    tokenNote(tokens) {
      if (!tokens) return "";
      const parts = [];
      if (tokens.cached !== null && tokens.cached !== undefined) parts.push(fmt.int(tokens.cached) + " cached");
      if (tokens.reasoning !== null && tokens.reasoning !== undefined) parts.push(fmt.int(tokens.reasoning) + " reasoning");
      if (tokens.requests) parts.push(fmt.int(tokens.reported) + " of " + fmt.int(tokens.requests) + " requests reported");
      return parts.join(" · ");
    },
    date(iso) {
      if (!iso) return "—";
      return String(iso).slice(0, 19).replace("T", " ");
    },
    p(value) {
      if (value === null || value === undefined) return "—";
      if (value < 0.001) return "< 0.001";
      return Number(value).toPrecision(2);
    },
    pIs(value) {
      /* "p = 0.034", or "p < 0.001" rather than "p = < 0.001". */
      const shown = this.p(value);
      return shown.startsWith("<") ? "p " + shown : "p = " + shown;
    },
    ratio(value) {
      return value === null || value === undefined ? "—" : "×" + Number(value).toFixed(2);
    },
  };

  /* Words for codes, so status never rests on colour. */

  const words = {
    run: { finished: ["✓", "finished"], interrupted: ["✗", "interrupted"], stopped: ["■", "stopped by budget"], running: ["…", "running"] },
    attempt: { passed: ["✓", "passed"], failed: ["✗", "failed"], not_judged: ["–", "not judged"] },
    scenario: { always: ["✓", "always passes"], flaky: ["~", "flaky"], never: ["✗", "never passes"], not_judged: ["–", "not judged"] },
    mark: { held: "✓", failed: "✗", none: "–" },
    markWord: { held: "held", failed: "failed", none: "not decided" },
    why: {
      user: "simulated user failed",
      judge: "judge failed",
      busy: "service stayed busy",
      not_trusted: "judge not confident enough",
      split: "the judge split",
      unquoted: "no quote of a few of the agent's own words",
      unseen: "the agent's tool calls could not be seen",
      agent: "agent failed",
      claim: "a claim failed",
      "": "",
    },
    cause: { agent: "agent", user: "simulated user", judge: "judge", service: "service", tool: "scenario's tool" },
    stop: {
      finished: "user finished",
      max_turns: "turn limit reached",
      agent_failed: "the agent failed",
      time_limit: "time limit",
      model_failed: "user model failed",
      agent_busy: "agent stayed busy",
    },
  };

  function status(kind, code, asBadge) {
    const pair = (words[kind] && words[kind][code]) || ["?", String(code)];
    return h("span", { class: (asBadge ? "badge " : "") + "st st-" + code }, pair[0] + " " + pair[1]);
  }

  function word(kind, code) {
    return (words[kind] && words[kind][code]) || String(code);
  }

  /* Why an attempt stopped, in words: "finished" with no turn of a simulated user is its script
     played out (no user said it was done). */
  function stopWord(d) {
    if (d && d.stop === "finished" && d.turns && d.turns.length && d.turns.every((turn) => turn.scripted)) return "script played out";
    return word("stop", d ? d.stop : "");
  }

  /* A subset of Markdown drawn as nodes: paragraphs, **bold**, *italic*, `code`, fenced code,
     bullet and numbered lists; a link is shown as its text and its URL, never followed.

     The inline marks are found in one pass, in linear time whatever the text holds: at each mark
     that may open a span, its close is looked for within the line, and every search remembers
     where it stopped, so a later search that starts inside that stretch is answered at once (a
     reply of a million "[" is drawn as fast as a million letters). The text is always drawn whole. */

  const WORD = /[A-Za-z0-9_]/;
  const SPACE = /\s/;

  /* The first index at or after a position whose character is a stop, remembered over one stretch. */
  function finder(text, stop) {
    let from = 0, at = -1;
    return (position) => {
      if (position < from || position > at) {
        from = position;
        at = position;
        while (at < text.length && !stop(text[at])) at++;
      }
      return at;
    };
  }

  function inline(text) {
    const out = [];
    const tick = finder(text, (c) => c === "`" || c === "\n");
    const star = finder(text, (c) => c === "*" || c === "\n");
    const bracket = finder(text, (c) => c === "]" || c === "\n");
    const paren = finder(text, (c) => c === ")" || SPACE.test(c));
    const openers = /[`*[]/g;  // one per call: the bold and italic inside are drawn by a call of their own
    let plain = 0;
    for (let found = openers.exec(text); found; found = openers.exec(text)) {
      const at = found.index;
      let node = null, end = at;
      if (text[at] === "`") {
        const close = tick(at + 1);
        if (close > at + 1 && text[close] === "`") { node = h("code", null, text.slice(at + 1, close)); end = close + 1; }
      } else if (text[at] === "*") {
        if (text[at + 1] === "*") {
          const close = star(at + 2);
          if (close > at + 2 && text[close] === "*" && text[close + 1] === "*") { node = h("strong", null, inline(text.slice(at + 2, close))); end = close + 2; }
        }
        const before = at > 0 ? text[at - 1] : "";
        const first = text[at + 1];
        if (!node && first !== undefined && first !== "*" && before !== "*" && !SPACE.test(first) && !WORD.test(before)) {
          const close = star(at + 1);
          const after = close + 1 < text.length ? text[close + 1] : "";
          if (text[close] === "*" && !SPACE.test(text[close - 1]) && !WORD.test(after) && after !== "*") { node = h("em", null, inline(text.slice(at + 1, close))); end = close + 1; }
        }
      } else {
        const close = bracket(at + 1);
        if (close > at + 1 && text[close] === "]" && text[close + 1] === "(") {
          const stop = paren(close + 2);
          if (stop > close + 2 && text[stop] === ")") {
            out.push(text.slice(plain, at), h("span", { class: "link" }, text.slice(at + 1, close)), h("span", { class: "url" }, " (" + text.slice(close + 2, stop) + ")"));
            plain = stop + 1;
            openers.lastIndex = plain;
            continue;
          }
        }
      }
      if (node) {
        out.push(text.slice(plain, at), node);
        plain = end;
        openers.lastIndex = end;
      }
    }
    out.push(text.slice(plain));
    return out.filter((piece) => piece !== "");
  }

  function markdown(text) {
    const box = h("div", { class: "md" });
    const lines = String(text === null || text === undefined ? "" : text).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*(```|~~~)/.exec(line);
      if (fence) {
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i++;
        box.appendChild(h("pre", null, h("code", null, body.join("\n"))));
        continue;
      }
      if (/^\s*[-*+]\s+/.test(line)) {
        const list = h("ul");
        while (i < lines.length && /^\s*[-*+]\s+/.test(lines[i])) list.appendChild(h("li", null, inline(lines[i++].replace(/^\s*[-*+]\s+/, ""))));
        box.appendChild(list);
        continue;
      }
      if (/^\s*\d+[.)]\s+/.test(line)) {
        const list = h("ol");
        while (i < lines.length && /^\s*\d+[.)]\s+/.test(lines[i])) list.appendChild(h("li", null, inline(lines[i++].replace(/^\s*\d+[.)]\s+/, ""))));
        box.appendChild(list);
        continue;
      }
      if (!line.trim()) { i++; continue; }
      const para = [];
      while (i < lines.length && lines[i].trim() && !/^\s*(```|~~~|[-*+]\s+|\d+[.)]\s+)/.test(lines[i])) para.push(lines[i++].replace(/^#{1,6}\s+/, ""));
      box.appendChild(h("p", null, inline(para.join("\n"))));
    }
    return box;
  }

  /* A page of a run under way (live.LiveReport writes it again every few seconds, the block
     #live saying how often and when) reloads itself while its data says the run is running, and
     keeps the reader's view across the reload: what the page keeps in the hash (filters, the
     open window) it writes there first; the scroll of the page and of the open window, the
     rows drawn, and the focused control with its caret go in sessionStorage, which a reload of
     the same tab keeps (from file:// too), and are put back once the page is drawn again.
     It waits while the reader is busy with the page: typing (a key in the last few seconds),
     a button held, text selected, or the tab hidden. A page written long before with nothing
     newer (its writer ended without marking the run) stops, as does a run that ended. */
  const began = performance.now();  /* when the page's scripts began to run: what drawing it cost is measured from here */
  function live(running) {
    const block = json("live");
    const every = block && block.every > 0 ? block.every : 5;
    const written = block ? Date.parse(block.written) : NaN;
    const age = Number.isNaN(written) ? 0 : (Date.now() - written) / 1000;
    const stale = Boolean(running && block && age > block.stale);
    const key = "convy-live:" + location.pathname;
    const words = !running ? "" : stale
      ? "This page was last written " + fmt.seconds(age) + " ago and nothing newer came: the process playing the run may have ended. Reload it by hand, or write it with `convy report`."
      : "This page reloads itself about every " + fmt.seconds(every) + " while the run plays, keeping your filters, window and scroll.";
    let saved = null;
    try {
      saved = JSON.parse(sessionStorage.getItem(key) || "null");
      sessionStorage.removeItem(key);
    } catch (error) {
      saved = null;
    }
    let touched = -Infinity;
    let held = false;
    const busy = () => document.hidden || held || performance.now() - touched < 3000 ||
      String(window.getSelection ? window.getSelection() : "") !== "";
    const scroller = () => {
      const open = document.querySelector("dialog[open] .window-body");
      return open || null;
    };
    const focused = () => {
      const node = document.activeElement;
      if (!node || node === document.body) return null;
      const row = node.closest && node.closest("tr[data-id], tr[data-run]");
      if (row) return row.dataset.id !== undefined ? { row: row.dataset.id, attr: "data-id" } : { row: row.dataset.run, attr: "data-run" };
      if (!node.id) return null;
      const caret = typeof node.selectionStart === "number" ? [node.selectionStart, node.selectionEnd] : null;
      return { id: node.id, caret };
    };
    /* Put a scroll back once the content is tall enough for it: a window's attempt may be drawn a
       task or two after the page (its chunk inflated), the rows as the page was drawn. */
    const scrolled = (node, top, left, tries) => {
      if (!node) return;
      if (node === window) window.scrollTo(left, top);
      else node.scrollTop = top;
      const now = node === window ? window.scrollY : node.scrollTop;
      if (Math.abs(now - top) > 1 && tries > 0) setTimeout(() => scrolled(node === window ? window : scroller(), top, left, tries - 1), 50);
    };
    /* The scroll is put back by this page alone, the same way on every reload, the open window's
       with it (a browser keeps the page's scroll across a reload, but not a window's). */
    if ((saved || (running && !stale)) && "scrollRestoration" in history) history.scrollRestoration = "manual";
    return {
      words,
      stale,
      /* Put back what was saved before the reload (own.restore gets the page's own part), then
         schedule the next reload while the run is running. */
      begin(own) {
        if (saved) {
          if (own.restore) own.restore(saved.own);
          scrolled(window, saved.y, saved.x, 40);
          if (saved.window !== null) scrolled(scroller(), saved.window, 0, 40);
          const one = saved.focus;
          let node = null;
          if (one && one.row) node = document.querySelector("tr[" + (one.attr === "data-run" ? "data-run" : "data-id") + "=\"" + CSS.escape(one.row) + "\"]");
          else if (one && one.id) node = document.getElementById(one.id);
          if (node && !(document.querySelector("dialog[open]") && !node.closest("dialog"))) {
            node.focus({ preventScroll: true });
            if (one.caret && typeof node.setSelectionRange === "function") node.setSelectionRange(one.caret[0], one.caret[1]);
          }
        }
        if (!running || stale) return;
        document.addEventListener("keydown", () => { touched = performance.now(); }, true);
        document.addEventListener("input", () => { touched = performance.now(); }, true);
        document.addEventListener("pointerdown", () => { held = true; }, true);
        document.addEventListener("pointerup", () => { held = false; touched = performance.now(); }, true);
        /* A large page takes a while to read and draw: it reloads no more often than ten times that. */
        const wait = Math.max(every * 1000, 10 * (performance.now() - began));
        const tick = () => {
          if (busy()) { setTimeout(tick, 1000); return; }
          if (own.save) own.save();
          const body = scroller();
          try {
            sessionStorage.setItem(key, JSON.stringify({
              x: window.scrollX, y: window.scrollY, window: body ? body.scrollTop : null,
              focus: focused(), own: own.keep ? own.keep() : null }));
          } catch (error) {
            /* storage refused (full, or off): the hash alone is kept */
          }
          location.reload();
        };
        setTimeout(tick, wait);
      },
    };
  }

  /* The view in the URL's hash: #key=value&key=value, so a link reopens it. */

  const hash = {
    read() {
      const params = new URLSearchParams(location.hash.replace(/^#/, ""));
      const out = {};
      for (const [key, value] of params) out[key] = value;
      return out;
    },
    write(state) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(state)) {
        if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
      }
      const text = params.toString();
      const url = location.pathname + location.search + (text ? "#" + text : "");
      try {
        history.replaceState(null, "", url);
      } catch (error) {
        location.hash = text;
      }
    },
  };

  /* Theme: the system's unless the reader chose; the choice kept where the browser allows. */

  const theme = {
    key: "convy-theme",
    stored() {
      try {
        return localStorage.getItem(theme.key);
      } catch (error) {
        return null;
      }
    },
    system() {
      return window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
    },
    current() {
      return document.documentElement.dataset.theme || theme.system();
    },
    /* The theme is always set on the page: the one chosen, or else the system's. The CSS then
       holds the dark colours once, under [data-theme="dark"]. */
    apply(name) {
      document.documentElement.dataset.theme = name === "light" || name === "dark" ? name : theme.system();
    },
    button() {
      const button = h("button", { type: "button", class: "theme", title: "Switch the theme (t)" });
      const label = () => {
        const dark = theme.current() === "dark";
        button.textContent = dark ? "☀ Light theme" : "☾ Dark theme";
        button.setAttribute("aria-label", dark ? "Switch to the light theme" : "Switch to the dark theme");
      };
      button.addEventListener("click", () => {
        const next = theme.current() === "dark" ? "light" : "dark";
        theme.apply(next);
        try {
          localStorage.setItem(theme.key, next);
        } catch (error) {
          /* file:// may refuse storage: the choice lasts for this page only */
        }
        label();
      });
      if (window.matchMedia) {
        const query = matchMedia("(prefers-color-scheme: dark)");
        if (query.addEventListener) query.addEventListener("change", () => { theme.apply(theme.stored()); label(); });
      }
      label();
      return button;
    },
  };
  theme.apply(theme.stored());

  /* A header with its facts: [label, value] pairs. */
  function facts(pairs) {
    return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([label, value]) => h("div", null, h("dt", null, label), h("dd", null, value))));
  }

  function tile(title, big, ...lines) {
    return h("div", { class: "tile" }, h("h2", null, title), h("div", { class: "big" }, big), lines.filter(Boolean).map((line) => h("div", { class: "line" }, line)));
  }

  /* A sortable header: a button that says where it sorts. */
  function sortHeader(label, key, state, onSort, numeric) {
    const active = state.sort === key;
    const th = h("th", { scope: "col", class: numeric ? "num" : null, "aria-sort": active ? (state.dir === "asc" ? "ascending" : "descending") : "none" });
    const arrow = active ? (state.dir === "asc" ? " ▲" : " ▼") : "";
    th.appendChild(h("button", { type: "button", title: "Sort by " + label, onclick: () => onSort(key) }, label + arrow));
    return th;
  }

  /* Compare for sorting: nulls last whatever the direction. */
  function compare(a, b, dir) {
    const none = (v) => v === null || v === undefined || (typeof v === "number" && Number.isNaN(v));
    if (none(a) && none(b)) return 0;
    if (none(a)) return 1;
    if (none(b)) return -1;
    const order = typeof a === "string" ? a.localeCompare(b) : a < b ? -1 : a > b ? 1 : 0;
    return dir === "asc" ? order : -order;
  }

  /* Keys: / to search, j/k or arrows between rows, Enter to open, t for the theme. */
  function typing(event) {
    const target = event.target;
    return target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA" || target.isContentEditable);
  }

  function keys(handlers) {
    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (typing(event)) {
        if (event.key === "Escape" && event.target.tagName === "INPUT") {
          event.target.blur();
        }
        if (event.key === "ArrowDown" && event.target.type === "search" && handlers.move) {
          event.preventDefault();
          event.target.blur();
          handlers.move(1);
        }
        return;
      }
      const key = event.key;
      const run = (name, ...args) => {
        if (handlers[name]) {
          event.preventDefault();
          handlers[name](...args);
        }
      };
      if (key === "/") run("search");
      else if (key === "j" || key === "ArrowDown") run("move", 1);
      else if (key === "k" || key === "ArrowUp") run("move", -1);
      else if (key === "Enter") {
        if (event.target && event.target.tagName === "BUTTON") return;
        if (event.target && event.target.tagName === "A") return;
        run("open");
      } else if (key === "ArrowRight") run("side", 1);
      else if (key === "ArrowLeft") run("side", -1);
      else if (key === "t") {
        const button = document.querySelector("button.theme");
        if (button) { event.preventDefault(); button.click(); }
      }
    });
  }

  /* Moving between a table's rows with the keys: the row `step` on from the focused one (or from
     the last cursor), kept within the rows, made the one that takes the focus. */
  function stepped(rows, cursor, step) {
    const at = rows.indexOf(document.activeElement);
    const from = at >= 0 ? at : cursor;
    return Math.max(0, Math.min(rows.length - 1, from < 0 ? 0 : from + step));
  }

  function focusRow(rows, index) {
    for (const tr of rows) tr.tabIndex = -1;
    rows[index].tabIndex = 0;
    rows[index].focus();
  }

  /* A touch screen, with no keyboard to speak of: no key hints there (neither the line of keys nor
     the search box's "( / )"). */
  const TOUCH = window.matchMedia("(hover: none) and (pointer: coarse)").matches;
  /* A narrow screen (a phone): what is folded there to reach the scenarios on the first screen. */
  const NARROW = window.matchMedia("(max-width: 720px)").matches;

  /* A search box's placeholder: its words, and on a screen with a keyboard the key that reaches it. */
  function placeholder(text) {
    return TOUCH ? text : text + "  ( / )";
  }

  function keyHelp(pairs) {
    return h("p", { class: "keys" }, pairs.map(([key, text], i) => [i ? " · " : "", h("kbd", null, key), " ", text]));
  }

  function icon() {
    const link = document.querySelector("link[rel=icon]");
    return h("img", { src: link ? link.getAttribute("href") : "", alt: "", width: 22, height: 22, class: "logo" });
  }

  return { h, s, add, fill, json, fmt, words, status, word, stopWord, markdown, hash, live, theme, facts, tile, sortHeader, compare, keys, keyHelp, placeholder, idText, TOUCH, NARROW, icon, safeHref, stepped, focusRow };
})();
