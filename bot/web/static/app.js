// Candor's local chat page: ask, show the server-rendered answer, send 👍/👎 feedback.
// The answer HTML comes from bot/web/render.py, which escapes everything taken from documents;
// everything this script writes itself goes through textContent.
"use strict";

(() => {
  const HISTORY_TURNS = 10; // earlier messages sent with a question, newest last
  const TURN_CHARS = 4000; // each one cut to this length (the server caps a request at 64 KB)

  const form = document.getElementById("ask-form");
  const input = document.getElementById("question");
  const askButton = document.getElementById("ask-button");
  const conversationLog = document.getElementById("conversation");
  const newConversation = document.getElementById("new-conversation");

  let conversationId = newConversationId();
  let turns = []; // [{text, from_bot}], oldest first

  function newConversationId() {
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes); // works on plain-HTTP hosts, unlike crypto.randomUUID
    return "web/" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function append(node) {
    const empty = conversationLog.querySelector(".empty-state");
    if (empty) empty.remove();
    conversationLog.appendChild(node);
    node.scrollIntoView({ block: "end", behavior: "smooth" });
    return node;
  }

  async function postJson(path, payload) {
    let response;
    try {
      response = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        credentials: "same-origin",
        body: JSON.stringify(payload),
      });
    } catch (error) {
      return { ok: false, data: { error: "Could not reach the Candor server. Is it still running?" } };
    }
    let data;
    try {
      data = await response.json();
    } catch (error) {
      data = { error: `The server answered ${response.status} without a readable message.` };
    }
    return { ok: response.ok, data };
  }

  async function ask(question) {
    const history = turns.slice(-HISTORY_TURNS).map((t) => ({ text: t.text.slice(0, TURN_CHARS), from_bot: t.from_bot }));
    append(element("div", "message from-user", question));
    const reply = append(element("div", "message from-bot pending", "Looking through the documents…"));
    const { ok, data } = await postJson("api/ask", { question, history, conversation: conversationId });
    reply.classList.remove("pending");
    if (!ok) {
      reply.classList.add("error");
      reply.textContent = data.error || "Something went wrong.";
      return;
    }
    reply.innerHTML = data.html;
    reply.appendChild(feedbackControls(data.answer.trace_id));
    turns.push({ text: question, from_bot: false }, { text: data.answer.text, from_bot: true });
  }

  function feedbackControls(traceId) {
    const box = element("div", "feedback");
    const prompt = element("span", "feedback-prompt", "Was this helpful?");
    const up = element("button", "rate", "👍");
    const down = element("button", "rate", "👎");
    up.type = down.type = "button";
    up.setAttribute("aria-label", "Helpful");
    down.setAttribute("aria-label", "Not helpful");
    const status = element("span", "feedback-status");
    box.append(prompt, up, down, status);

    async function send(rating, comment, controls) {
      controls.forEach((c) => (c.disabled = true));
      const { ok, data } = await postJson("api/feedback", { trace_id: traceId, rating, comment });
      if (ok) {
        box.replaceChildren(element("span", "feedback-status", "Thanks for the feedback."));
      } else {
        controls.forEach((c) => (c.disabled = false));
        status.textContent = data.error || "The feedback could not be sent.";
      }
    }

    up.addEventListener("click", () => send("up", null, [up, down]));
    down.addEventListener("click", () => {
      up.disabled = down.disabled = true;
      const comment = element("textarea", "feedback-comment");
      comment.rows = 2;
      comment.maxLength = 4000;
      comment.placeholder = "What was wrong or missing? (optional)";
      const submit = element("button", null, "Send");
      submit.type = "button";
      submit.addEventListener("click", () => send("down", comment.value.trim() || null, [submit, comment]));
      box.append(comment, submit);
      comment.focus();
    });
    return box;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    input.value = "";
    askButton.disabled = true;
    try {
      await ask(question);
    } finally {
      askButton.disabled = false;
      input.focus();
    }
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  newConversation.addEventListener("click", () => {
    conversationId = newConversationId();
    turns = [];
    conversationLog.replaceChildren(element("p", "empty-state", "New conversation. Ask away."));
    input.focus();
  });

  input.focus();
})();
