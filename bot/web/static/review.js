// Candor's review queue: label a sample of answers from the keyboard.
// One item at a time: an answer (each sentence beside the passages it cites) or an abstention (the
// question beside what a relaxed re-check of the documents found). Keys: s / u / p label the current
// sentence supported / unsupported / partly; c / w label an abstention correct / "the documents did
// answer this"; j / k move between sentences; n / b between items. Each label is stored at once.
"use strict";

(function () {
  const queue = document.getElementById("queue");
  const status = document.getElementById("status");
  const progress = document.getElementById("progress");
  const labeller = document.getElementById("labeller");
  const SENTENCE_KEYS = { s: "supported", u: "unsupported", p: "partly" };
  const ABSTENTION_KEYS = { c: "correct_abstention", w: "wrong_abstention" };
  const WORDS = {
    supported: "supported",
    unsupported: "unsupported",
    partly: "partly supported",
    correct_abstention: "correct abstention",
    wrong_abstention: "the documents did answer this",
  };

  let items = [];
  let at = 0; // the item shown
  let row = 0; // the sentence of an answer
  let given = 0;
  let saving = false; // one label at a time: a key pressed meanwhile must not label another item

  labeller.value = localStorage.getItem("candor-labeller") || "";
  labeller.addEventListener("change", () => localStorage.setItem("candor-labeller", labeller.value.trim()));
  labeller.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      localStorage.setItem("candor-labeller", labeller.value.trim());
      queue.focus();
    }
  });

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function say(text, kind) {
    status.textContent = text;
    status.className = kind || "";
  }

  function safeUrl(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null;
  }

  async function load() {
    const params = new URLSearchParams(location.search);
    const wanted = new URLSearchParams();
    for (const key of ["since", "until", "kb", "sample"]) if (params.get(key)) wanted.set(key, params.get(key));
    const response = await fetch("/dashboard/review/items?" + wanted.toString(), { credentials: "same-origin" });
    const body = await response.json().catch(() => ({ error: "The queue could not be read." }));
    if (!response.ok) {
      queue.replaceChildren(el("p", { class: "error" }, body.error || "The queue could not be read."));
      return;
    }
    items = [
      ...body.answers.map((answer) => ({ kind: "answer", ...answer })),
      ...body.abstentions.map((abstention) => ({ kind: "abstention", ...abstention })),
    ];
    at = 0;
    row = firstOpen(items[0]);
    render();
    queue.focus();
  }

  function firstOpen(item) {
    if (!item || item.kind !== "answer") return 0;
    const open = item.sentences.findIndex((sentence) => !sentence.label);
    return open === -1 ? 0 : open;
  }

  function done(item) {
    return item.kind === "answer" ? item.sentences.every((s) => s.label) : Boolean(item.label);
  }

  function render() {
    const finished = items.filter(done).length;
    progress.textContent = items.length
      ? `Item ${Math.min(at + 1, items.length)} of ${items.length} · ${finished} done · ${given} labels given`
      : "";
    if (!items.length) {
      queue.replaceChildren(el("p", { class: "empty" }, "Nothing to review in this window: every sampled item has a label."));
      return;
    }
    const item = items[at];
    queue.replaceChildren(item.kind === "answer" ? answerView(item) : abstentionView(item));
    const current = queue.querySelector(".current");
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  function answerView(item) {
    const sources = new Map(item.sources.map((source) => [source.n, source]));
    const rows = item.sentences.map((sentence, index) => {
      const passages = sentence.citations
        .map((n) => sources.get(n))
        .filter(Boolean)
        .map((source) => passageView(source));
      return el(
        "section",
        { class: "row" + (index === row ? " current" : "") + (sentence.label ? " labelled" : ""), "data-position": sentence.position },
        el("div", { class: "sentence" }, el("p", {}, sentence.text), labelLine(sentence.label, "s u p")),
        el("div", { class: "passages" }, ...(passages.length ? passages : [el("p", { class: "muted" }, "It cites no passage.")]))
      );
    });
    return el(
      "article",
      { class: "item answer", "data-trace": item.trace_id },
      el("h2", {}, item.question),
      el("p", { class: "muted" }, `Answer of ${item.created_at.slice(0, 16).replace("T", " ")} · trace ${item.trace_id}`),
      ...rows
    );
  }

  function passageView(source) {
    const url = safeUrl(source.url);
    const title = url ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, source.title) : source.title;
    const where = [source.heading, source.answered_by ? `answered by ${source.answered_by}` : source.document].filter(Boolean).join(" · ");
    return el("blockquote", { class: "passage" }, el("p", { class: "source" }, `[${source.n}] `, title, where ? ` · ${where}` : ""), el("p", {}, source.excerpt));
  }

  function abstentionView(item) {
    const evidence = item.evidence.map((found) =>
      el(
        "blockquote",
        { class: "passage" },
        el("p", { class: "source" }, [found.title, found.heading].filter(Boolean).join(" > "), ` · ${found.document} · score ${found.score}`),
        el("p", {}, found.sentence)
      )
    );
    return el(
      "article",
      { class: "item abstention" + (item.label ? " labelled" : ""), "data-trace": item.trace_id },
      el("h2", {}, item.part ? `Unanswered part: ${item.part}` : item.question),
      item.part ? el("p", { class: "muted" }, `of: ${item.question}`) : null,
      el("p", { class: "muted" }, `Candor did not answer (${item.created_at.slice(0, 16).replace("T", " ")}) · trace ${item.trace_id}`),
      el("div", { class: "row current" }, labelLine(item.label, "c w")),
      el("h3", {}, "What the documents hold nearest to it"),
      ...(evidence.length ? evidence : [el("p", { class: "muted" }, "Nothing found in the documents this asker could read.")])
    );
  }

  function labelLine(label, keys) {
    const hint = keys === "c w" ? "c correct · w the documents did answer this" : "s supported · u unsupported · p partly";
    return el("p", { class: "label" }, label ? `Label: ${WORDS[label] || label}` : hint);
  }

  async function label(value) {
    const name = labeller.value.trim();
    if (!name) {
      say("Type your name first (it is stored with each label).", "error");
      labeller.focus();
      return;
    }
    if (saving) {
      say("Still saving the last label…");
      return;
    }
    localStorage.setItem("candor-labeller", name);
    // what is labelled is fixed now: the reviewer may move on while the label is saved
    const item = items[at];
    const sentence = item.kind === "answer" ? item.sentences[row] : null;
    const body = sentence
      ? { kind: "sentence", trace_id: item.trace_id, position: sentence.position, sentence: sentence.text, label: value, labeller: name }
      : { kind: "abstention", trace_id: item.trace_id, part: item.part, label: value, labeller: name };
    saving = true;
    say("Saving…");
    let response;
    try {
      response = await fetch("/dashboard/review/labels", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    } catch (error) {
      saving = false;
      say("Not saved: the server could not be reached. Press the key again.", "error");
      return;
    }
    saving = false;
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      say(`Not saved: ${answer.error || response.status}`, "error");
      return;
    }
    given += 1;
    say(`Saved: ${WORDS[value]}.`, "ok");
    if (sentence) sentence.label = value;
    else item.label = value;
    if (items[at] !== item) {
      render(); // the reviewer moved on meanwhile: stay where they are
      return;
    }
    if (sentence) {
      const next = item.sentences.findIndex((s) => !s.label);
      if (next === -1) move(1);
      else {
        row = next;
        render();
      }
    } else {
      move(1);
    }
  }

  function move(step) {
    if (!items.length) return;
    at = Math.max(0, Math.min(items.length - 1, at + step));
    row = firstOpen(items[at]);
    render();
  }

  function moveRow(step) {
    const item = items[at];
    if (!item || item.kind !== "answer") return;
    row = Math.max(0, Math.min(item.sentences.length - 1, row + step));
    render();
  }

  document.addEventListener("keydown", (event) => {
    if (event.target === labeller || event.ctrlKey || event.metaKey || event.altKey) return;
    const item = items[at];
    if (!item) return;
    const key = event.key.toLowerCase();
    const labels = item.kind === "answer" ? SENTENCE_KEYS : ABSTENTION_KEYS;
    if (labels[key]) label(labels[key]);
    else if (key === "j" || key === "arrowdown") moveRow(1);
    else if (key === "k" || key === "arrowup") moveRow(-1);
    else if (key === "n" || key === "arrowright") move(1);
    else if (key === "b" || key === "arrowleft") move(-1);
    else return;
    event.preventDefault();
  });

  load().catch((error) => say(`The queue could not be loaded: ${error}`, "error"));
})();
