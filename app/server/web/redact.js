// Redaction on a session's page: an admin removes an event's payload, or one field of it,
// from the log (POST /api/sessions/ID/redactions, docs/erasure.md). Each event drawn gets a
// Redact button (admins only: the API refuses everyone else); it opens a dialog to pick the
// part (a field of the payload as a JSON Pointer, picked or typed, or the whole payload) and
// to say why. The server keeps the chain provable and records a `redaction` event; the page
// then draws the events again, so the removed part reads as its placeholder ("[redacted]"),
// and marks each redacted event with a badge and the list of what was removed, by whom, why.

import { api } from "./api.js";
import { el } from "./dom.js";
import { clock, localTime } from "./format.js";

/** The longest reason the API takes (MAX_REASON in app/events/redaction.py). */
const MAX_REASON = 2000;
// The fields offered in the dialog's list: so many at most, so deep at most (any other can be
// typed as a pointer).
const MAX_FIELDS = 300;
const MAX_DEPTH = 8;
const PREVIEW = 40;

/** One reference token of a JSON Pointer (RFC 6901): ~ is ~0, / is ~1. */
export function pointerToken(key) {
  return String(key).replaceAll("~", "~0").replaceAll("/", "~1");
}

/** How a redacted part is named to a reader: its pointer, or "the whole payload". */
export function partName(path) {
  return path ? path : "the whole payload";
}

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return `array of ${value.length}`;
  if (typeof value === "object") {
    const n = Object.keys(value).length;
    return `object, ${n} field${n === 1 ? "" : "s"}`;
  }
  if (typeof value === "string") {
    const flat = value.replace(/\s+/g, " ");
    return `"${flat.length > PREVIEW ? `${flat.slice(0, PREVIEW)}…` : flat}"`;
  }
  return String(value);
}

/** The payload's fields, parents first, as [pointer, what it holds]: every key and array item
 * down to MAX_DEPTH, at most MAX_FIELDS of them; none at or under a part in ``gone``. */
export function fieldsOf(payload, gone = []) {
  const found = [];
  const removed = (pointer) => gone.some((path) => path === "" || pointer === path || pointer.startsWith(`${path}/`));
  const walk = (value, pointer, depth) => {
    if (found.length >= MAX_FIELDS || depth > MAX_DEPTH || value === null || typeof value !== "object") return;
    const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item]) : Object.entries(value);
    for (const [key, child] of entries) {
      if (found.length >= MAX_FIELDS) return;
      const here = `${pointer}/${pointerToken(key)}`;
      if (removed(here)) continue;
      found.push([here, describe(child)]);
      walk(child, here, depth + 1);
    }
  };
  walk(payload, "", 1);
  return found;
}

/** What the API's refusal says, with each field it names (a validation problem's errors). */
function refusal(error) {
  const status = error.status ? ` (${error.status})` : "";
  const fields = (error.errors || []).map((e) => `${e.key ? `${e.key}: ` : ""}${e.message || ""}`).filter(Boolean);
  return `Not redacted${status}: ${error.message}${fields.length ? ` — ${fields.join("; ")}` : ""}`;
}

/** The dialog (one per page, reused): ``open(event, gone)`` shows it for an event, ``gone``
 * the parts of it already redacted (not offered again). ``onRedacted(records, seq)`` is
 * called with what the API recorded. */
class RedactDialog {
  constructor(sessionId, onRedacted) {
    this.sessionId = sessionId;
    this.onRedacted = onRedacted;
    this.event = null;
    this.title = el("h2", { id: "redact-title" }, "Redact");
    this.oneField = el("input", { type: "radio", name: "redact-part", id: "redact-one", value: "field", checked: true });
    this.whole = el("input", { type: "radio", name: "redact-part", id: "redact-whole", value: "whole" });
    this.fields = el("select", { id: "redact-field", name: "field" });
    this.pointer = el("input", { id: "redact-pointer", name: "path", autocomplete: "off", spellcheck: "false",
      placeholder: "/content", maxlength: 1000, "aria-describedby": "redact-pointer-help" });
    this.reason = el("textarea", { id: "redact-reason", name: "reason", rows: 2, required: true, maxlength: MAX_REASON,
      placeholder: "e.g. an API key pasted into the task" });
    this.problem = el("p", { class: "error redact-error", role: "alert", hidden: true });
    this.submit = el("button", { type: "submit", class: "danger" }, "Redact");
    this.cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
    this.fieldRows = el("div", { class: "redact-field-rows" },
      el("div", {}, el("label", { for: "redact-field" }, "Pick a field"), this.fields),
      el("div", {}, el("label", { for: "redact-pointer" }, "JSON Pointer"), this.pointer,
        el("p", { class: "muted small", id: "redact-pointer-help" },
          "Picked above, or typed: /output, /response/content, /files/0 (~1 for a / in a name, ~0 for a ~).")));
    this.form = el("form", { method: "dialog", class: "redact-form" },
      this.title,
      el("fieldset", { class: "redact-part" }, el("legend", {}, "What to remove"),
        el("label", { for: "redact-one", class: "small" }, this.oneField, "One field"),
        el("label", { for: "redact-whole", class: "small" }, this.whole, "The whole payload")),
      this.fieldRows,
      el("div", {}, el("label", { for: "redact-reason" }, "Reason (required: it is recorded with the redaction)"), this.reason),
      el("p", { class: "redact-warning", role: "note" },
        el("strong", {}, "This cannot be undone. "),
        "The part is deleted from the log for good; the hash chain still verifies, and a redaction record says who removed what and why. A long text or a prompt message stored once goes from every event that names it, in any session."),
      this.problem,
      el("div", { class: "actions" }, this.submit, this.cancel));
    this.dialog = el("dialog", { class: "redact-dialog", "aria-labelledby": "redact-title" }, this.form);
    this.fields.addEventListener("change", () => {
      if (this.fields.value) this.pointer.value = this.fields.value;
    });
    this.pointer.addEventListener("input", () => {
      this.fields.value = [...this.fields.options].some((o) => o.value === this.pointer.value) ? this.pointer.value : "";
    });
    for (const radio of [this.oneField, this.whole]) radio.addEventListener("change", () => this.showPart());
    this.cancel.addEventListener("click", () => this.dialog.close());
    this.form.addEventListener("input", () => this.say(null)); // what it said was about before
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
  }

  showPart() {
    const one = this.oneField.checked;
    this.fields.disabled = !one;
    this.pointer.disabled = !one;
    this.fieldRows.classList.toggle("off", !one);
  }

  open(event, gone) {
    this.event = event;
    this.title.textContent = `Redact event #${event.seq} (${event.kind})`;
    const offered = fieldsOf(event.payload, gone);
    this.fields.replaceChildren(
      el("option", { value: "" }, offered.length ? "Choose a field…" : "No field left to choose"),
      ...offered.map(([pointer, what]) => el("option", { value: pointer }, `${pointer} — ${what}`)));
    this.oneField.checked = true;
    this.pointer.value = "";
    this.reason.value = "";
    this.showPart();
    this.say(null);
    this.submit.disabled = false;
    if (!this.dialog.open) this.dialog.showModal();
    this.fields.focus();
  }

  say(text) {
    this.problem.hidden = !text;
    this.problem.textContent = text || "";
  }

  async send() {
    const path = this.whole.checked ? "" : this.pointer.value.trim();
    const reason = this.reason.value.trim();
    if (!this.whole.checked && !path.startsWith("/")) {
      this.say("Choose a field, or type a JSON Pointer beginning with / (or choose the whole payload).");
      (path ? this.pointer : this.fields).focus();
      return;
    }
    if (!reason) {
      this.say("Say why: the reason is recorded with the redaction.");
      this.reason.focus();
      return;
    }
    const seq = this.event.seq;
    this.say(null);
    this.submit.disabled = true;
    this.submit.textContent = "Redacting…";
    let made;
    try {
      made = await api(`/api/sessions/${this.sessionId}/redactions`, { method: "POST", body: { seq, path, reason } });
    } catch (error) {
      this.say(refusal(error));
      return;
    } finally {
      this.submit.disabled = false;
      this.submit.textContent = "Redact";
    }
    this.dialog.close();
    await this.onRedacted(made.redactions, seq);
  }
}

/** A redaction as the API gives it (RedactionView), from its `redaction` event. */
function fromEvent(event) {
  const p = event.payload;
  return { seq: event.seq, created_at: event.created_at, target_seq: p.target_seq, path: p.path ?? "",
    user: p.user ?? null, reason: p.reason ?? "", was: p.was ?? null };
}

/** One line of what was removed: "/content redacted by root at 10:02:03: a pasted key". */
function redactionLine(r, { target = false } = {}) {
  return [
    target ? `#${r.target_seq} ` : "",
    el("code", {}, partName(r.path)), ` redacted by ${r.user || "?"}`,
    r.created_at ? [" at ", el("time", { datetime: r.created_at, title: localTime(r.created_at) }, clock(r.created_at))] : "",
    `: ${r.reason}`,
  ];
}

/** What the timeline shows of a `redaction` event: which event, which part, who, why. */
export function redactionEntry(event, targetHref) {
  const r = fromEvent(event);
  return el("p", { class: "redaction-line" }, "Event ",
    targetHref ? el("a", { href: targetHref(r.target_seq) }, `#${r.target_seq}`) : `#${r.target_seq}`, " ",
    el("code", {}, partName(r.path)), r.was ? ` (${r.was})` : "", ` redacted by ${r.user || "?"}: ${r.reason}`);
}

/** A session's redactions on its page: the badge and list on each redacted event, and (for an
 * admin) the Redact control on each event. ``onRedacted(seq)`` draws the events again. */
export class SessionRedactions {
  constructor({ sessionId, list, isAdmin, onRedacted }) {
    this.sessionId = sessionId;
    this.list = list;
    this.isAdmin = Boolean(isAdmin);
    this.byTarget = new Map(); // target seq -> redactions
    this.seen = new Set(); // seqs of the redaction records taken
    this.events = new Map(); // seq -> the event drawn (what the dialog offers to remove)
    this.dialog = null;
    if (this.isAdmin) {
      this.dialog = new RedactDialog(sessionId, async (records, seq) => {
        for (const r of records) if (r.session_id === sessionId) this.add(r);
        await onRedacted(seq);
      });
      this.list.addEventListener("click", (event) => {
        const button = event.target.closest(".redact-here");
        if (!button) return;
        const seq = Number(button.dataset.redactSeq);
        const drawn = this.events.get(seq);
        if (drawn) this.dialog.open(drawn, (this.byTarget.get(seq) || []).map((r) => r.path));
      });
    }
  }

  /** The dialog's element, to put on the page (admins only; null otherwise). */
  get element() {
    return this.dialog?.dialog ?? null;
  }

  /** Redaction records among the events received (drawn or not yet). */
  take(events) {
    for (const event of events) if (event.kind === "redaction") this.add(fromEvent(event));
  }

  add(r) {
    if (this.seen.has(r.seq)) return;
    this.seen.add(r.seq);
    if (!this.byTarget.has(r.target_seq)) this.byTarget.set(r.target_seq, []);
    this.byTarget.get(r.target_seq).push(r);
    const node = this.list.querySelector(`[data-seq="${Number(r.target_seq)}"]`);
    if (node) this.mark(node, r.target_seq);
  }

  /** The badge on the event's entry (an output's on its command's) and the list of what was
   * removed from it, drawn again from every record of it taken so far. */
  mark(node, seq) {
    const records = this.byTarget.get(seq) || [];
    if (!records.length) return;
    node.classList.add("redacted");
    const entry = node.closest(".timeline > li") || node;
    const where = entry.querySelector(":scope > .meta") || entry.querySelector(":scope > details > summary.meta") || entry;
    if (!where.querySelector(":scope > .redacted-badge")) {
      const label = where.querySelector(":scope > .label");
      const badge = el("span", { class: "redacted-badge", title: "a part of this event was removed from the log" }, "redacted");
      if (label) label.after(badge);
      else where.prepend(badge);
    }
    const inside = node !== entry;
    const listed = el("ul", { class: "redactions-of", "aria-label": `Redactions of event #${seq}`, "data-redactions-of": seq },
      records.map((r) => el("li", {}, ...redactionLine(r, { target: inside }))));
    const old = entry.querySelector(`:scope > .redactions-of[data-redactions-of="${seq}"]`);
    if (old) old.replaceWith(listed);
    else entry.append(listed);
  }

  /** The timeline's hook for each event it draws: its marks and (for an admin) its Redact
   * button. ``node`` is the entry, or an output drawn inside its command's entry. */
  decorate(event, node, inside = false) {
    if (this.isAdmin && event.kind !== "redaction") {
      this.events.set(event.seq, event);
      const entry = inside ? node.closest(".timeline > li") : node;
      const button = el("button", { type: "button", class: "link redact-here", "data-redact-seq": event.seq,
        "aria-label": `Redact event #${event.seq}`, title: "remove this event's content, or a part of it, from the log" },
      inside ? `Redact #${event.seq}` : "Redact");
      if (inside) node.append(button); // in the output, under its text
      else if (entry) (entry.querySelector(":scope > .meta") || entry).append(button);
    }
    this.mark(node, event.seq);
  }

  /** Forgets the events drawn (the timeline is drawn again); the records are kept. */
  reset() {
    this.events.clear();
  }
}
