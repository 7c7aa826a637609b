// Finding events inside one session: words and a kind ("errors only" among them), matched by
// the API over the whole session (GET /api/sessions/ID/search), however little of it is
// drawn. The matches are counted, marked on the timeline, listed, and stepped through with
// Previous / Next (n / N); each step opens the event where it is, drawing the list up to it.

import { api } from "./api.js";
import { el } from "./dom.js";
import { clock, localTime } from "./format.js";

/** The kind filter's choices: the API's kind groups (app/server/event_search.py). */
export const KINDS = [
  ["", "All events"],
  ["messages", "Messages"],
  ["commands", "Commands"],
  ["files", "Files and edits"],
  ["model_calls", "Model calls"],
  ["tools", "MCP tools"],
  ["thoughts", "Thoughts"],
  ["annotations", "Annotations"],
  ["redactions", "Redactions"],
  ["errors", "Errors only"],
];
// Matches listed under the bar (the count and Previous / Next reach every match).
const LISTED = 200;
const TYPING_PAUSE_MS = 300;

/** The search bar of a session's page. ``open(seq)`` shows an event (the session page's
 * reveal); ``onMatches(seqs)`` marks them on the timeline. */
export class EventFinder {
  constructor(sessionId, { open, onMatches, showError }) {
    this.sessionId = sessionId;
    this.open = open;
    this.onMatches = onMatches;
    this.showError = showError;
    this.matches = [];
    this.at = -1;
    this.asked = 0; // a search answered after a later one started is dropped
    this.timer = null;
    this.text = el("input", { type: "search", id: "find-text", name: "text", placeholder: "Find in this session", autocomplete: "off",
      "aria-describedby": "find-count" });
    this.kind = el("select", { id: "find-kind", name: "kind" }, KINDS.map(([value, label]) => el("option", { value }, label)));
    this.count = el("span", { id: "find-count", class: "find-count small", role: "status", "aria-live": "polite" });
    this.previous = el("button", { type: "button", class: "secondary", disabled: true, title: "previous match (N)" }, "↑ Previous");
    this.next = el("button", { type: "button", class: "secondary", disabled: true, title: "next match (n)" }, "Next ↓");
    this.clearButton = el("button", { type: "button", class: "link", hidden: true }, "Clear");
    this.list = el("ol", { class: "find-results", "aria-label": "Matching events" });
    this.listBox = el("details", { class: "find-list", hidden: true }, el("summary", {}, "List the matches"), this.list);
    this.element = el("div", { class: "find", role: "search", "aria-label": "Find events in this session" },
      el("form", { class: "find-bar" },
        el("label", { for: "find-text", class: "visually-hidden" }, "Words to find"), this.text,
        el("label", { for: "find-kind", class: "visually-hidden" }, "Kind of event"), this.kind,
        this.previous, this.next, this.count, this.clearButton),
      this.listBox);
    this.element.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      if (this.matches.length && this.lastAsked === this.query()) this.step(1);
      else this.search();
    });
    this.text.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.search(), TYPING_PAUSE_MS);
    });
    this.kind.addEventListener("change", () => this.search());
    this.previous.addEventListener("click", () => this.step(-1));
    this.next.addEventListener("click", () => this.step(1));
    this.clearButton.addEventListener("click", () => this.clear());
  }

  query() {
    const params = new URLSearchParams();
    const text = this.text.value.trim();
    if (text) params.set("text", text);
    if (this.kind.value) params.set("kind", this.kind.value);
    return params.toString();
  }

  /** Errors only, and the first of them opened: the summary's error count links here. */
  async showErrors() {
    this.kind.value = "errors";
    this.text.value = "";
    await this.search();
    if (this.matches.length) this.step(1);
  }

  async search() {
    clearTimeout(this.timer);
    const query = this.query();
    const mine = ++this.asked;
    this.lastAsked = query;
    if (!query) {
      this.clear(false);
      return;
    }
    this.count.textContent = "searching…";
    let found;
    try {
      found = await api(`/api/sessions/${this.sessionId}/search?${query}`);
    } catch (error) {
      if (mine === this.asked) {
        this.count.textContent = "";
        this.showError(error);
      }
      return;
    }
    if (mine !== this.asked) return;
    this.matches = found.matches;
    this.total = found.total;
    this.at = -1;
    this.onMatches(this.matches.map((m) => m.seq));
    this.drawList();
    this.update();
  }

  drawList() {
    this.list.replaceChildren(...this.matches.slice(0, LISTED).map((m, index) =>
      el("li", { class: m.error ? "bad" : "" },
        el("a", { href: `#/sessions/${this.sessionId}/events/${m.seq}`, "data-index": index,
          onclick: (event) => { event.preventDefault(); this.goTo(index); } },
          el("span", { class: "seq" }, `#${m.seq}`), " ",
          el("span", { class: "kind" }, m.kind), " ",
          el("time", { datetime: m.created_at, title: localTime(m.created_at) }, clock(m.created_at)), " ",
          el("span", { class: "snippet" }, m.snippet)))));
    if (this.matches.length > LISTED) {
      this.list.append(el("li", { class: "muted small" }, `and ${(this.matches.length - LISTED).toLocaleString()} more: Next reaches them`));
    }
    this.listBox.hidden = this.matches.length === 0;
  }

  update() {
    const n = this.matches.length;
    const where = this.at >= 0 ? `${(this.at + 1).toLocaleString()} of ` : "";
    const cut = this.total > n ? ` (the first ${n.toLocaleString()} are stepped through)` : "";
    this.count.textContent = n ? `${where}${this.total.toLocaleString()} match${this.total === 1 ? "" : "es"}${cut}` : "no match";
    this.previous.disabled = this.next.disabled = n === 0;
    this.clearButton.hidden = false;
    for (const link of this.list.querySelectorAll("a[aria-current]")) link.removeAttribute("aria-current");
    this.list.querySelector(`a[data-index="${this.at}"]`)?.setAttribute("aria-current", "true");
  }

  /** The next (1) or previous (-1) match, around the ends. */
  step(direction) {
    const n = this.matches.length;
    if (!n) return;
    this.goTo(this.at < 0 ? (direction > 0 ? 0 : n - 1) : (this.at + direction + n) % n);
  }

  goTo(index) {
    this.at = index;
    this.update();
    this.open(this.matches[index].seq);
  }

  focus() {
    this.text.focus();
    this.text.select();
  }

  clear(resetFields = true) {
    if (resetFields) {
      this.text.value = "";
      this.kind.value = "";
      this.asked += 1;
    }
    this.matches = [];
    this.total = 0;
    this.at = -1;
    this.onMatches([]);
    this.list.replaceChildren();
    this.listBox.hidden = true;
    this.count.textContent = "";
    this.previous.disabled = this.next.disabled = true;
    this.clearButton.hidden = true;
  }

  close() {
    clearTimeout(this.timer);
    this.asked += 1;
  }
}
