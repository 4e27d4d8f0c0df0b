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
    dialog.addEventListener("close", () => onClose());
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

  /* Packed data (page.py's Chunks): the JSON block #id says which chunk holds each scenario,
     and block #id-i holds chunk i, gzipped, in base64. The index is read when first asked
     about, and each chunk read and inflated once, when one of its values is first asked for or
     is likely to be (warm: a row pointed at or focused, the page idle). A chunk inflated is kept
     as its value, so a window whose chunk is ready is drawn whole in the task of its click, with
     no promise between the click and the frame that shows it.
     Records may come written as arrays (views.py's array_like records): a value is read back
     into objects by the index's layout (page.py's Layout), when it is first asked for. */
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
    if (one.kind === "thought") {
      return lazy({ class: "step thought" },
        h("summary", null, h("span", { class: "step-kind" }, "✎ thought"), " ", h("span", { class: "muted preview" }, short(one.text, 90))),
        () => markdown(one.text));
    }
    const result = one.result === null || one.result === undefined ? null : one.result;
    return lazy({ class: "step call" },
      h("summary", null,
        h("span", { class: "step-kind" }, "⚙ call"), " ",
        h("code", null, one.name + "(" + short(one.arguments === "{}" ? "" : one.arguments, 70) + ")"),
        result === null ? h("span", { class: "muted" }, " → result not reported") : h("span", { class: "muted" }, " → " + short(result, 50)),
        one.seconds === null || one.seconds === undefined ? null : h("span", { class: "muted" }, " · " + fmt.seconds(one.seconds))),
      () => h("div", { class: "call-body" },
        h("div", { class: "label" }, "arguments"), h("pre", null, pretty(one.arguments)),
        h("div", { class: "label" }, "result"), result === null ? h("p", { class: "muted" }, "not reported by the agent") : h("pre", null, pretty(result))));
  }

  /* A turn's steps, collapsed, under a line that says how many of each kind. */
  function steps(one, open) {
    if (!one.steps.length) return null;
    const { thoughts, calls } = one;
    const said = [thoughts ? thoughts + (thoughts === 1 ? " thought" : " thoughts") : "", calls ? calls + (calls === 1 ? " tool call" : " tool calls") : ""].filter(Boolean).join(", ");
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

  /* d: the attempt, for the labelling controls (pages/labels.js) beside each decision. */
  function decisions(list, d) {
    if (!list.length) return h("p", { class: "muted" }, "No claims were decided.");
    return h("ul", { class: "decisions" }, list.map((one) => {
      const mark = one.held ? ["✓", "held", "held"] : ["✗", "failed", "failed"];
      const untrusted = !one.trusted;
      return h("li", { class: "decision" + (untrusted ? " untrusted" : "") },
        h("div", { class: "decision-head" },
          h("span", { class: "st st-" + (untrusted ? "none" : mark[2]) }, (untrusted ? "– " : mark[0] + " ") + mark[1] + (untrusted ? ", not counted" : "")),
          h("span", { class: "claim" }, one.claim),
          h("span", { class: "tag" }, "by " + one.by),
          one.grade === null || one.grade === undefined ? null : h("span", { class: "tag" }, "grade: " + one.grade),
          one.confidence === null || one.confidence === undefined ? null : h("span", { class: "tag" }, "confidence " + fmt.pct(one.confidence, 0)),
          typeof Labels === "undefined" ? null : Labels.control(d, one)),
        one.reason ? h("div", { class: "reason" }, markdown(one.reason)) : null);
    }));
  }

  const LANES = ["agent", "user", "judge", "waiting"];

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
    let end = d.seconds || 0;
    for (const one of spans) end = Math.max(end, one.start + one.seconds);
    if (!(end > 0)) return h("p", { class: "muted" }, "No time was recorded.");
    const width = 1000, left = 78, right = 12, lane = 20, top = 4;
    const height = top + LANES.length * lane + 18;
    const x = (t) => left + (t / end) * (width - left - right);
    const svg = s("svg", { class: "timeline", viewBox: "0 0 " + width + " " + height, preserveAspectRatio: "none", role: "img", "aria-label": "Timeline of attempt " + d.attempt + ": " + spans.length + " spans over " + fmt.seconds(end) });
    LANES.forEach((name, i) => {
      const y = top + i * lane;
      svg.appendChild(s("rect", { class: "lane-bg", x: left, y: y + 2, width: width - left - right, height: lane - 4 }));
      svg.appendChild(s("text", { class: "lane-name", x: 4, y: y + lane / 2 + 4 }, name));
    });
    for (const one of spans) {
      const i = LANES.indexOf(one.lane);
      if (i < 0) continue;
      const y = top + i * lane;
      const rect = s("rect", { class: "span span-" + one.lane, x: x(one.start), y: y + 3, width: Math.max(2, x(one.start + one.seconds) - x(one.start)), height: lane - 6, rx: 2 });
      rect.appendChild(s("title", null, one.label + " · starts at " + fmt.seconds(one.start) + " · " + fmt.seconds(one.seconds)));
      svg.appendChild(rect);
    }
    const axis = top + LANES.length * lane + 13;
    svg.appendChild(s("text", { class: "axis", x: left, y: axis }, "0"));
    svg.appendChild(s("text", { class: "axis", x: width - right, y: axis, "text-anchor": "end" }, fmt.seconds(end)));
    const list = lazy({ class: "span-list" },
      h("summary", null, "Timeline as a list"),
      () => h("table", { class: "grid small" },
        h("thead", null, h("tr", null, h("th", null, "lane"), h("th", null, "what"), h("th", { class: "num" }, "starts at"), h("th", { class: "num" }, "took"))),
        h("tbody", null, spans.map((one) => h("tr", null, h("td", null, one.lane), h("td", null, one.label), h("td", { class: "num" }, fmt.seconds(one.start)), h("td", { class: "num" }, fmt.seconds(one.seconds)))))));
    const legend = h("div", { class: "legend small" }, LANES.map((name) => h("span", null, h("i", { class: "swatch span-" + name }), name === "waiting" ? "waiting on a busy service" : name === "user" ? "user model" : name)));
    return h("div", { class: "timeline-box" }, svg, legend, list);
  }

  /* One attempt in full. */
  function attempt(d, options) {
    const open = options && options.open;
    const head = h("div", { class: "attempt-head" },
      status("attempt", d.status, true),
      d.why ? h("span", null, word("why", d.why)) : null,
      h("span", { class: "muted" }, "stop: " + word("stop", d.stop)),
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
    return h("div", { class: "attempt", "data-attempt": d.attempt },
      head,
      failed,
      h("h3", null, "Decisions"),
      decisions(d.decisions, d),
      h("h3", null, "Timeline"),
      timeline(d),
      h("h3", null, "Dialogue ", d.turns.some((t) => t.steps.length) ? expand : null),
      d.turns.length ? d.turns.map((one, i) => turn(one, i + 1, open)) : h("p", { class: "muted" }, "No turn was played."));
  }

  return { frame, packed, attempt, turn, decisions, timeline, steps, message };
})();
