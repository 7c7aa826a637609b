// The review queue (#/review): the sessions matching a filter (state, model, annotation label
// or tag) that nobody has reviewed yet, one after another. A session is reviewed once its log
// holds a `reviewed` annotation on the whole session (docs/web.md), whoever wrote it. Each is
// shown as its own page (summary, timeline, annotations); "Reviewed, next" records that
// annotation, with an optional comment, and opens the next; "Skip" leaves it in the queue.
// The filters are in the address (#/review?state=finished&label=...), so a queue can be sent.

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { stateLabel } from "./format.js";
import { labelSuggestions } from "./annotations.js";
import { sessionView } from "./session.js";

const STATES = ["finished", "awaiting_user_input", "paused", "stopped", "limit", "error", "interrupted", "running"];
const FILTERS = ["state", "model", "label", "tag"];

function filterForm(filters, go) {
  const state = el("select", { id: "r-state", name: "state" }, el("option", { value: "" }, "any state"),
    STATES.map((s) => el("option", { value: s, selected: filters.get("state") === s }, stateLabel(s))));
  const input = (name, attributes) => el("input", { id: `r-${name}`, name, autocomplete: "off", value: filters.get(name) || "", ...attributes });
  const model = input("model", { placeholder: "e.g. openai/gpt-4o" });
  const label = input("label", { list: labelSuggestions(), placeholder: "e.g. unsafe command" });
  const tag = input("tag", {});
  const chosen = FILTERS.filter((name) => filters.get(name)).map((name) => `${name} ${filters.get(name)}`);
  const form = el("form", { class: "filters review-filters", role: "search", "aria-label": "Which sessions to review" },
    el("div", {}, el("label", { for: "r-state" }, "State"), state),
    el("div", {}, el("label", { for: "r-model" }, "Model"), model),
    el("div", {}, el("label", { for: "r-label" }, "Annotation label"), label),
    el("div", {}, el("label", { for: "r-tag" }, "Annotation tag"), tag),
    el("div", { class: "apply" }, el("button", { type: "submit", class: "secondary" }, "Apply")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const picked = new URLSearchParams();
    for (const [name, control] of [["state", state], ["model", model], ["label", label], ["tag", tag]]) {
      if (control.value.trim()) picked.set(name, control.value.trim());
    }
    go(`/review${picked.size ? `?${picked}` : ""}`);
  });
  // folded (a phone's screen is for the session): its summary says what is chosen
  return el("details", { class: "review-filters-fold" },
    el("summary", {}, `Filters: ${chosen.length ? chosen.join(" · ") : "none (every session)"}`), form);
}

export function reviewView(context, filters) {
  const { main, showError, clearError, go } = context;
  const query = new URLSearchParams();
  for (const name of FILTERS) if (filters.get(name)) query.set(name, filters.get(name));
  const left = el("p", { class: "review-left", role: "status", "aria-live": "polite" }, "Loading the queue…");
  const comment = el("input", { id: "r-comment", name: "comment", autocomplete: "off", maxlength: 4000, placeholder: "optional" });
  const done = el("button", { type: "submit" }, "Reviewed, next");
  const skip = el("button", { type: "button", class: "secondary" }, "Skip");
  const bar = el("form", { class: "review-bar", "aria-label": "Review this session", hidden: true },
    el("div", { class: "review-comment" }, el("label", { for: "r-comment" }, "Review comment"), comment),
    el("div", { class: "actions" }, done, skip));
  const holder = el("div", { class: "review-session" });
  clear(main).append(
    el("div", { class: "heading" }, el("h1", {}, "Review queue"), left),
    el("p", { class: "muted small" }, "Sessions matching the filters that nobody has reviewed yet (no “reviewed” annotation on the whole session), newest first."),
    filterForm(filters, go), bar, holder);

  let leaveSession = () => {};
  let current = null;
  let stopped = false;
  const skipped = new Set();

  async function next() {
    let queue;
    try {
      queue = await api(`/api/review?${query}`);
    } catch (error) {
      if (!stopped) showError(error);
      return;
    }
    if (stopped) return;
    const waiting = queue.sessions.filter((s) => !skipped.has(s.id));
    const count = queue.remaining >= 10000 ? "10,000+" : queue.remaining.toLocaleString();
    left.textContent = `${count} left to review${skipped.size ? ` (${skipped.size} skipped)` : ""}`;
    leaveSession();
    leaveSession = () => {};
    current = waiting[0] || null;
    bar.hidden = current === null;
    if (current === null) {
      holder.replaceChildren(el("p", { class: "card empty-queue" }, queue.remaining && skipped.size
        ? "Only skipped sessions are left: open the queue again to see them."
        : "Nothing left to review with these filters."));
      return;
    }
    leaveSession = sessionView({ ...context, main: holder }, current.id);
  }

  bar.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!current) return;
    clearError();
    done.disabled = true;
    try {
      const body = { label: "reviewed", comment: comment.value.trim() };
      await api(`/api/sessions/${current.id}/annotations`, { method: "POST", body });
      comment.value = "";
      await next();
      main.scrollIntoView({ block: "start" });
    } catch (error) {
      showError(error);
    } finally {
      done.disabled = false;
    }
  });
  skip.addEventListener("click", () => {
    if (!current) return;
    skipped.add(current.id);
    next();
  });
  next();
  return () => {
    stopped = true;
    leaveSession();
  };
}
